#include "scheduler/daemon/status_query.h"

#include <algorithm>
#include <map>

#include "common/placement/placement_json.h"
#include "scheduler/daemon/planner.h"

namespace dancemoe::scheduler {
namespace {

using nlohmann::ordered_json;

ordered_json optional_number(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

}  // namespace

ordered_json StatusQuery::devices_json(const Member& m) const {
  // What the committed placement puts on each device of the node.
  std::map<std::string, std::pair<int64_t, uint64_t>> held;  // device -> (experts, bytes)
  if (v_.committed) {
    for (const NodePlacement& n : v_.committed->nodes) {
      if (n.node_id != m.id()) continue;
      for (const DevicePlacement& d : n.devices) {
        auto& [count, bytes] = held[d.device];
        for (const ExpertRef& r : d.experts) {
          ++count;
          const int32_t x = v_.model.flat(r.layer, r.expert);
          if (x >= 0) bytes += v_.model.shape.expert_bytes(x);
        }
      }
    }
  }
  ordered_json devices = ordered_json::array();
  for (const store::DeviceRecord& d : m.record.devices) {
    const auto h = held.find(d.name);
    devices.push_back({{"name", d.name},
                       {"kind", d.kind.empty() ? ordered_json(nullptr) : ordered_json(d.kind)},
                       {"budget_bytes", d.expert_budget_bytes},
                       {"experts", h == held.end() ? 0 : h->second.first},
                       {"bytes_used", h == held.end() ? 0 : h->second.second},
                       {"load_bytes_per_s", d.load_bytes_per_s},
                       {"us_per_pair", d.us_per_pair() > 0 ? ordered_json(d.us_per_pair())
                                                           : ordered_json(nullptr)}});
  }
  return devices;
}

Result<ordered_json> StatusQuery::placement(std::optional<int> layer) const {
  if (!v_.committed) return not_found("no placement has been committed yet");
  if (layer && v_.model.index.flat(static_cast<uint32_t>(*layer), 0) < 0) {
    return invalid_argument("--layer " + std::to_string(*layer) +
                            " is not a MoE layer of the model (MoE layers: " +
                            std::to_string(v_.model.moe_layers.front()) + " to " +
                            std::to_string(v_.model.moe_layers.back()) + ")");
  }
  return placement_json(*v_.committed, layer);
}

ordered_json StatusQuery::decision_json(const store::DecisionRecord& d) {
  return {{"id", d.id},
          {"time_ms", d.time_ms},
          {"trigger", d.trigger},
          {"policy", d.policy},
          {"outcome", d.outcome},
          {"adopt", d.outcome == "adopted"},
          {"cost_current_s", d.cost_current_s},
          {"cost_new_s", d.cost_new_s},
          {"migration_s", d.migration_s},
          {"migration_bytes", d.migration_bytes},
          {"local_hit_ratio_current", d.local_hit_ratio_current},
          {"local_hit_ratio_new", d.local_hit_ratio_new},
          {"window_s", d.window_s},
          {"n_nodes", d.n_nodes},
          {"from_version", d.from_version},
          {"version", d.version},
          {"message", d.message}};
}

Result<ordered_json> StatusQuery::status() const {
  const int64_t wall = v_.clock.wall_ms();
  ordered_json out;
  out["scheduler"] = {{"cluster_id", v_.options.cluster_id},
                      {"uptime_s", (v_.clock.steady_ms() - v_.started_ms) / 1000.0},
                      {"policy", v_.options.planner.policy},
                      {"interval_s", v_.options.interval_ms / 1000.0},
                      {"db", v_.store.path()},
                      {"db_bytes", v_.store.file_bytes()},
                      {"time_ms", wall},
                      {"report_interval_s", v_.options.report_interval_ms / 1000.0}};
  out["model"] = {{"id", v_.model.model_id},
                  {"dir", v_.model.dir.string()},
                  {"layers", v_.model.n_layers},
                  {"moe_layers", v_.model.moe_layers.size()},
                  {"experts_per_layer", v_.model.n_experts},
                  {"top_k", v_.model.n_experts_per_token},
                  {"expert_bytes", v_.model.shape.min_expert_bytes()}};
  int64_t since = 0;
  if (v_.committed) {
    since = v_.committed->committed_ms.value_or(v_.committed->created_ms);
    out["placement"] = {{"version", v_.committed->version}, {"policy", v_.committed->policy},
                        {"trigger", v_.committed->trigger}, {"committed_ms", since},
                        {"age_s", (wall - since) / 1000.0}, {"nodes", v_.committed->nodes.size()}};
  } else {
    out["placement"] = nullptr;
  }
  const std::optional<uint64_t> version =
      v_.committed ? std::optional<uint64_t>(v_.committed->version) : std::nullopt;
  DMOE_ASSIGN_OR_RETURN(auto totals, v_.store.totals_since(since, version));
  DMOE_ASSIGN_OR_RETURN(auto latest, v_.store.latest_reports());
  int n_up = 0, n_down = 0, n_unknown = 0;
  uint64_t requests = 0, tokens = 0;
  ordered_json list = ordered_json::array();
  for (const auto& [id, m] : v_.membership.all()) {
    n_up += m.state == NodeState::kUp;
    n_down += m.state == NodeState::kDown;
    n_unknown += m.state == NodeState::kUnknown;
    ordered_json node = {{"id", id}, {"state", node_state_name(m.state)}};
    const auto last = latest.find(id);
    std::optional<double> last_ratio;
    if (last != latest.end() && last->second.activations > 0) {
      last_ratio = static_cast<double>(last->second.local_hits) /
                   static_cast<double>(last->second.activations);
    }
    node["local_hit_ratio_last_window"] = optional_number(last_ratio);
    if (last != latest.end()) {
      node["last_report_ms"] = last->second.received_ms;
      node["last_report_age_s"] = (wall - last->second.received_ms) / 1000.0;
    } else {
      node["last_report_ms"] = nullptr;
      node["last_report_age_s"] = nullptr;
    }
    const store::NodeTotals t = totals.count(id) ? totals[id] : store::NodeTotals{};
    node["local_hit_ratio_since_adoption"] = optional_number(t.local_hit_ratio());
    node["requests_last_window"] = last != latest.end() ? last->second.requests : 0;
    node["tokens_last_window"] = last != latest.end() ? last->second.tokens : 0;
    node["requests_since_adoption"] = t.requests;
    node["tokens_since_adoption"] = t.tokens;
    node["placement_version"] = m.heartbeat_version;
    node["devices"] = devices_json(m);
    requests += t.requests;
    tokens += t.tokens;
    list.push_back(std::move(node));
  }
  out["nodes"] = {{"up", n_up}, {"down", n_down}, {"unknown", n_unknown}, {"list", list}};
  out["served_since_adoption"] = {{"requests", requests}, {"tokens", tokens}};
  DMOE_ASSIGN_OR_RETURN(auto decisions, v_.store.recent_decisions(1));
  out["last_decision"] = decisions.empty() ? ordered_json(nullptr) : decision_json(decisions[0]);
  if (v_.migration) {
    const store::MigrationRecord& r = v_.migration->record();
    out["migration"] = {{"version", v_.migration->version()},
                        {"from_version", r.from_version},
                        {"trigger", r.trigger},
                        {"started_ms", r.started_ms},
                        {"elapsed_s", (wall - r.started_ms) / 1000.0},
                        {"timeout_s", v_.options.prepare_timeout_ms / 1000.0},
                        {"bytes", r.bytes},
                        {"ready", v_.migration->ready()},
                        {"waiting", v_.migration->waiting()},
                        {"progress", v_.migration->progress()},
                        {"participants", migration_participants_json()}};
  } else {
    out["migration"] = nullptr;
  }
  out["counters"] = v_.counters.to_json();
  return out;
}

ordered_json StatusQuery::migration_participants_json() const {
  // Nodes report Ready only once all their experts are loaded: a node's
  // progress is 0 or 1, weighted here by the bytes it has to load.
  const std::vector<NodePlacement>* from = v_.committed ? &v_.committed->nodes : nullptr;
  ordered_json out = ordered_json::array();
  for (const NodeMoves& m : diff_placements(from, v_.migration->placement().nodes, v_.model)) {
    if (!v_.migration->is_participant(m.node_id)) continue;
    out.push_back({{"id", m.node_id},
                   {"ready", v_.migration->ready().count(m.node_id) > 0},
                   {"added", m.added},
                   {"removed", m.removed},
                   {"load_bytes", m.load_bytes}});
  }
  return out;
}

Result<ordered_json> StatusQuery::nodes() const {
  const int64_t since = v_.committed ? v_.committed->committed_ms.value_or(0) : 0;
  const std::optional<uint64_t> version =
      v_.committed ? std::optional<uint64_t>(v_.committed->version) : std::nullopt;
  DMOE_ASSIGN_OR_RETURN(auto totals, v_.store.totals_since(since, version));
  std::map<std::string, int64_t> held;
  if (v_.committed) {
    for (const NodePlacement& n : v_.committed->nodes) {
      for (const DevicePlacement& d : n.devices) held[n.node_id] += d.experts.size();
    }
  }
  const int64_t now = v_.clock.steady_ms();
  ordered_json list = ordered_json::array();
  for (const auto& [id, m] : v_.membership.all()) {
    const ordered_json devices = devices_json(m);
    const store::NodeTotals t = totals.count(id) ? totals[id] : store::NodeTotals{};
    ordered_json peers = ordered_json::array();
    for (const auto& [peer, p] : t.peers) {
      peers.push_back({{"peer", peer},
                       {"calls", p.calls},
                       {"mean_latency_us", p.calls ? p.latency_sum_us / p.calls : 0.0},
                       {"bytes", p.bytes},
                       {"failures", p.failures}});
    }
    list.push_back({{"id", id},
                    {"state", node_state_name(m.state)},
                    {"expert_endpoint", m.record.expert_endpoint},
                    {"http_endpoint", m.record.http_endpoint},
                    {"host_memory_bytes", m.record.host_memory_bytes},
                    {"expert_type", m.expert_type},
                    {"role", m.experts_only ? "experts" : "full"},
                    {"expert_files", m.expert_files_partial
                                         ? ordered_json(std::count(m.expert_files.begin(),
                                                                   m.expert_files.end(), true))
                                         : ordered_json("all")},
                    {"devices", devices},
                    {"first_registered_ms", m.record.first_registered_ms},
                    {"last_registered_ms", m.record.last_registered_ms},
                    {"last_seen_s_ago", m.state == NodeState::kDown
                                            ? ordered_json(nullptr)
                                            : ordered_json((now - m.last_seen_ms) / 1000.0)},
                    {"placement_version", m.heartbeat_version},
                    {"requests_in_flight", m.requests_in_flight},
                    {"experts_held", held.count(id) ? held[id] : 0},
                    {"local_hit_ratio_since_adoption", optional_number(t.local_hit_ratio())},
                    {"local_mean_latency_us", optional_number(t.local_mean_us())},
                    {"remote_mean_latency_us", optional_number(t.remote_mean_us())},
                    {"remote_calls", t.remote_calls},
                    {"remote_failures", t.remote_failures},
                    {"requests_since_adoption", t.requests},
                    {"tokens_since_adoption", t.tokens},
                    {"peers", peers}});
  }
  return ordered_json{{"committed_version", v_.committed ? v_.committed->version : 0},
                      {"nodes", list}};
}

ordered_json StatusQuery::placement_json(const store::PlacementRecord& p,
                                         std::optional<int> layer) const {
  // The placement in its one JSON form (only `layer` when given), then what
  // the scheduler knows about it and, per layer, who holds each expert.
  ClusterPlacement shown{p.version, p.nodes};
  std::map<std::pair<int, int>, std::vector<std::string>> holders;
  for (NodePlacement& n : shown.nodes) {
    for (DevicePlacement& d : n.devices) {
      if (layer) std::erase_if(d.experts, [&](const ExpertRef& r) { return r.layer != *layer; });
      for (const ExpertRef& r : d.experts) holders[{r.layer, r.expert}].push_back(n.node_id);
    }
  }
  ordered_json layers = ordered_json::array();
  for (int32_t l : v_.model.moe_layers) {
    if (layer && l != *layer) continue;
    ordered_json experts = ordered_json::array();
    for (int32_t e = 0; e < v_.model.n_experts; ++e) {
      auto it = holders.find({l, e});
      std::vector<std::string> who = it == holders.end() ? std::vector<std::string>() : it->second;
      std::sort(who.begin(), who.end());
      who.erase(std::unique(who.begin(), who.end()), who.end());
      experts.push_back(who);
    }
    layers.push_back({{"layer", l}, {"holders", experts}});
  }
  ordered_json out = placement_to_json(shown);
  out["policy"] = p.policy;
  out["method"] = p.method;
  out["trigger"] = p.trigger;
  out["state"] = p.state;
  out["created_ms"] = p.created_ms;
  out["committed_ms"] = p.committed_ms ? ordered_json(*p.committed_ms) : ordered_json(nullptr);
  out["experts_per_layer"] = v_.model.n_experts;
  out["layers"] = std::move(layers);
  return out;
}

Result<ordered_json> StatusQuery::migrations(int limit) const {
  DMOE_ASSIGN_OR_RETURN(auto migrations, v_.store.recent_migrations(limit));
  DMOE_ASSIGN_OR_RETURN(auto decisions, v_.store.recent_decisions(limit));
  ordered_json m = ordered_json::array();
  for (const store::MigrationRecord& r : migrations) {
    m.push_back({{"id", r.id},
                 {"from_version", r.from_version},
                 {"to_version", r.to_version},
                 {"trigger", r.trigger},
                 {"started_ms", r.started_ms},
                 {"ended_ms", r.ended_ms ? ordered_json(*r.ended_ms) : ordered_json(nullptr)},
                 {"duration_s", r.ended_ms ? ordered_json((*r.ended_ms - r.started_ms) / 1000.0)
                                           : ordered_json(nullptr)},
                 {"bytes", r.bytes},
                 {"n_nodes", r.n_nodes},
                 {"outcome", r.outcome},
                 {"reason", r.reason}});
  }
  ordered_json d = ordered_json::array();
  for (const store::DecisionRecord& r : decisions) d.push_back(decision_json(r));
  if (v_.migration) {
    // The in-progress one carries its live progress.
    for (auto& row : m) {
      if (row["to_version"] == v_.migration->version() && row["outcome"] == "preparing") {
        row["progress"] = v_.migration->progress();
        row["waiting"] = v_.migration->waiting();
      }
    }
  }
  return ordered_json{{"migrations", m}, {"decisions", d}};
}

}  // namespace dancemoe::scheduler
