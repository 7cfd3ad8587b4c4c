// SchedulerService: keys, node-id bindings and the members nodes are told
// (service.h, key_ring.h, docs/security.md).
//
//   what      arguments_json                      reply
//   admit     {"name": N, "public_key": Z85}      {"admitted": N}
//   revoke    {"name": N}                         {"revoked": N, "node_id": ID or null}
//   forget    {"node_id": ID}                     {"forgotten": ID}
// All three need an operator key (service_status.cpp checks it).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/base/sha256.h"
#include "scheduler/daemon/service.h"

namespace dancemoe::scheduler {
namespace {

using nlohmann::ordered_json;

constexpr int64_t kInsecureWarningMs = 60'000;

Result<std::string> string_argument(const nlohmann::json& args, const char* name) {
  if (!args.contains(name) || !args[name].is_string() || args[name].get<std::string>().empty()) {
    return invalid_argument(std::string("argument '") + name + "': expected a non-empty string");
  }
  return args[name].get<std::string>();
}

// Equal sets give equal versions, across scheduler restarts too, so a node
// is sent the members again only when they really changed. Never 0 (a node
// that has none yet holds 0).
uint64_t members_version(const std::vector<proto::MemberKey>& members) {
  Sha256 hash;
  hash.update("dancemoe-members-v1\n");
  for (const proto::MemberKey& k : members) {
    hash.update(k.key_name + " " + k.public_key + " " + k.node_id + "\n");
  }
  const std::array<uint8_t, 32> digest = hash.finish();
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | digest[static_cast<size_t>(i)];
  return v == 0 ? 1 : v;
}

}  // namespace

std::string SchedulerService::check_binding(const proto::Register& reg, const Principal& who,
                                            const std::string& key) {
  if (!keys_.secure()) return {};
  if (!who.node) {
    return "key '" + who.name + "' is an operator key; node '" + reg.node_id +
           "' must register with its own node key (dancemoe nodes admit)";
  }
  const auto bound = bindings_.find(reg.node_id);
  if (bound != bindings_.end() && bound->second.public_key != key) {
    return "node id '" + reg.node_id + "' is bound to key '" + bound->second.key_name +
           "', which registered it first; key '" + who.name +
           "' may not register it (`dancemoe nodes forget " + reg.node_id +
           "` releases the id of a node that is gone)";
  }
  for (const auto& [node_id, binding] : bindings_) {
    if (binding.public_key == key && node_id != reg.node_id) {
      return "key '" + who.name + "' already registered node '" + node_id +
             "'; one key is one node (`dancemoe nodes forget " + node_id + "` releases it)";
    }
  }
  if (bound != bindings_.end()) return {};
  store::KeyBinding binding{reg.node_id, key, who.name, clock_->wall_ms()};
  const Status stored = store_->bind_node_key(binding);
  if (!stored.is_ok()) {
    ++counters_.store_errors;
    return "the scheduler cannot record the key of node '" + reg.node_id + "': " + stored.message();
  }
  spdlog::info("node id '{}' is now bound to key '{}'", reg.node_id, who.name);
  bindings_[reg.node_id] = std::move(binding);
  return {};
}

void SchedulerService::refresh_members() {
  if (!keys_.secure()) return;
  proto::Members members;
  for (const auto& [name, key] : keys_.node_keys()) {
    proto::MemberKey k;
    k.key_name = name;
    k.public_key = key;
    for (const auto& [node_id, binding] : bindings_) {
      if (binding.public_key == key) k.node_id = node_id;
    }
    members.members.push_back(std::move(k));
  }
  members.version = members_version(members.members);
  if (members.version == members_.version) return;
  members_ = std::move(members);
  for (const Member* m : membership_.up()) {
    if (!m->routing_id.empty()) send_members(m->routing_id);
  }
}

void SchedulerService::send_members(const std::string& routing_id) {
  if (keys_.secure() && !routing_id.empty()) send(routing_id, members_);
}

void SchedulerService::warn_if_insecure(int64_t now_ms) {
  if (keys_.secure() || now_ms < next_insecure_warning_ms_) return;
  next_insecure_warning_ms_ = now_ms + kInsecureWarningMs;
  spdlog::warn(
      "INSECURE: --insecure is set -- no CurveZMQ, no keys: anyone who reaches {} can register "
      "nodes, change the placement and read the cluster (docs/security.md)",
      "this scheduler's control port");
}

Result<ordered_json> SchedulerService::admit_key(const nlohmann::json& args) {
  DMOE_ASSIGN_OR_RETURN(const std::string name, string_argument(args, "name"));
  DMOE_ASSIGN_OR_RETURN(const std::string key, string_argument(args, "public_key"));
  DMOE_RETURN_IF_ERROR(keys_.admit(name, key));
  spdlog::info("node key '{}' admitted", name);
  refresh_members();
  return ordered_json{{"admitted", name}};
}

Result<ordered_json> SchedulerService::revoke_key(const nlohmann::json& args) {
  DMOE_ASSIGN_OR_RETURN(const std::string name, string_argument(args, "name"));
  DMOE_ASSIGN_OR_RETURN(const std::string key, keys_.revoke(name));
  ordered_json reply = {{"revoked", name}, {"node_id", nullptr}};
  for (const auto& [node_id, binding] : bindings_) {
    if (binding.public_key != key) continue;
    reply["node_id"] = node_id;
    // Its messages are dropped from now on (an unknown key); it is down at
    // once, so its experts' coverage is repaired without waiting for
    // missed heartbeats.
    if (membership_.mark_down(node_id, clock_->wall_ms())) on_nodes_down({node_id});
  }
  spdlog::warn("node key '{}' revoked{}", name,
               reply["node_id"].is_null()
                   ? std::string()
                   : " (node '" + reply["node_id"].get<std::string>() + "' is down)");
  refresh_members();
  maybe_repair_coverage();
  return reply;
}

Result<ordered_json> SchedulerService::forget_node(const nlohmann::json& args) {
  DMOE_ASSIGN_OR_RETURN(const std::string node_id, string_argument(args, "node_id"));
  if (const Member* m = membership_.find(node_id); m != nullptr && m->state == NodeState::kUp) {
    return failed_precondition("node '" + node_id +
                               "' is up; stop it (or revoke its key) before forgetting it");
  }
  if (migration_ && migration_->is_participant(node_id)) {
    return failed_precondition("node '" + node_id + "' takes part in the migration to version " +
                               std::to_string(migration_->version()) + "; wait for it to end");
  }
  DMOE_RETURN_IF_ERROR(store_->forget_node(node_id));
  membership_.forget(node_id);
  bindings_.erase(node_id);
  resyncs_.erase(node_id);
  spdlog::info("node '{}' forgotten: its record and key binding are gone", node_id);
  refresh_members();
  return ordered_json{{"forgotten", node_id}};
}

}  // namespace dancemoe::scheduler
