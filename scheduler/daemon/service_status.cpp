// SchedulerService: status queries from the `dancemoe` CLI (StatusRequest
// -> StatusReply with JSON text). The JSON shapes are the CLI's contract;
// add fields, do not rename them.
//
//   what          arguments_json                 reply
//   status        {}                             cluster summary (see status_json)
//   nodes         {}                             every known node in detail
//   placement     {"layer": L?}                  the committed placement
//   migrations    {"limit": N?}                  recent migrations and decisions
//   propose       {"policy": NAME?}              dry run: candidate, moves, gate
//   round         {"policy": NAME?}              a gated round now; the decision
//   apply         {"policy": NAME?} or           operator override: adopted without
//                 {"placement": PLACEMENT}       the gate; the decision
// A placement, in replies and in `apply`, is in its one JSON form
// (common/placement/placement_json.h); a reply adds what the scheduler knows
// of it (policy, state, times) and per layer the holders of each expert.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/placement/placement_json.h"
#include "scheduler/daemon/service.h"
#include "scheduler/placement/policy.h"

namespace dancemoe::scheduler {
namespace {

using nlohmann::ordered_json;

// The source named in errors about an operator's placement (`placement apply`).
const std::string kOperatorPlacement = "placement";

ordered_json optional_number(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json moves_json(const std::vector<NodeMoves>& moves) {
  ordered_json out = ordered_json::array();
  for (const NodeMoves& m : moves) {
    out.push_back({{"node", m.node_id},
                   {"added", m.added},
                   {"removed", m.removed},
                   {"kept", m.kept},
                   {"load_bytes", m.load_bytes}});
  }
  return out;
}

Result<int64_t> int_argument(const nlohmann::json& args, const char* name, int64_t fallback) {
  if (!args.contains(name)) return fallback;
  if (!args[name].is_number_integer()) {
    return invalid_argument(std::string("argument '") + name + "': expected an integer");
  }
  return args[name].get<int64_t>();
}

Result<std::string> policy_argument(const nlohmann::json& args) {
  if (!args.contains("policy")) return std::string();
  if (!args["policy"].is_string()) {
    return invalid_argument("argument 'policy': expected a policy name");
  }
  std::string name = args["policy"].get<std::string>();
  if (placement::find_policy(name) == nullptr) {
    return invalid_argument("unknown placement policy '" + name +
                            "'; known policies: " + placement::policy_names());
  }
  return name;
}

}  // namespace

void SchedulerService::on_status(const std::string& routing_id, const proto::Envelope& env,
                                 const proto::StatusRequest& request) {
  ++counters_.status_requests;
  nlohmann::json args = nlohmann::json::object();
  if (!request.arguments_json.empty()) {
    args = nlohmann::json::parse(request.arguments_json, nullptr, /*allow_exceptions=*/false);
    if (args.is_discarded() || !args.is_object()) {
      reject(routing_id, env.sequence,
             invalid_argument("StatusRequest.arguments_json: expected a JSON object"),
             Rejection::kInvalidRequest);
      return;
    }
  }
  Result<ordered_json> reply = status_query(request.what, args);
  if (!reply.is_ok()) {
    send(routing_id, proto::Error{reply.status().code(), reply.status().message(), env.sequence});
    return;
  }
  // Strings from nodes (device names, endpoints) are not guaranteed UTF-8:
  // replace what is not, rather than fail the whole answer.
  send(routing_id,
       proto::StatusReply{reply->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
}

Result<ordered_json> SchedulerService::status_query(const std::string& what,
                                                    const nlohmann::json& args) {
  if (what == "status") return status_json();
  if (what == "nodes") return nodes_json();
  if (what == "placement") {
    if (!committed_) return not_found("no placement has been committed yet");
    DMOE_ASSIGN_OR_RETURN(const int64_t layer, int_argument(args, "layer", -1));
    if (layer >= 0 && model_.index.flat(static_cast<uint32_t>(layer), 0) < 0) {
      return invalid_argument("--layer " + std::to_string(layer) +
                              " is not a MoE layer of the "
                              "model (MoE layers: " +
                              std::to_string(model_.moe_layers.front()) + " to " +
                              std::to_string(model_.moe_layers.back()) + ")");
    }
    return placement_json(*committed_,
                          layer >= 0 ? std::optional<int>(static_cast<int>(layer)) : std::nullopt);
  }
  if (what == "migrations") {
    DMOE_ASSIGN_OR_RETURN(const int64_t limit, int_argument(args, "limit", 20));
    return migrations_json(static_cast<int>(std::clamp<int64_t>(limit, 1, 1000)));
  }
  if (what == "propose") {
    DMOE_ASSIGN_OR_RETURN(const std::string policy, policy_argument(args));
    return propose_json(policy);
  }
  if (what == "round" || what == "apply") {
    DMOE_ASSIGN_OR_RETURN(const std::string policy, policy_argument(args));
    RoundRequest request(what == "round" ? "on_demand" : "operator", policy);
    request.force = what == "apply";
    if (what == "apply" && args.contains("placement")) {
      request.operator_placement = &args["placement"];
    }
    if (migration_) {
      return failed_precondition("a migration to version " + std::to_string(migration_->version()) +
                                 " is in progress");
    }
    const store::DecisionRecord d = run_round(request);
    return decision_json(d);
  }
  return invalid_argument("unknown status query '" + what +
                          "' (expected status, nodes, placement, migrations, propose, round "
                          "or apply)");
}

ordered_json SchedulerService::decision_json(const store::DecisionRecord& d) const {
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

Result<ordered_json> SchedulerService::status_json() {
  const int64_t wall = clock_->wall_ms();
  ordered_json out;
  out["scheduler"] = {{"cluster_id", options_.cluster_id},
                      {"uptime_s", (clock_->steady_ms() - started_ms_) / 1000.0},
                      {"policy", options_.planner.policy},
                      {"interval_s", options_.interval_ms / 1000.0},
                      {"db", store_->path()},
                      {"db_bytes", store_->file_bytes()}};
  out["model"] = {{"id", model_.model_id},
                  {"dir", model_.dir.string()},
                  {"layers", model_.n_layers},
                  {"moe_layers", model_.moe_layers.size()},
                  {"experts_per_layer", model_.n_experts},
                  {"top_k", model_.n_experts_per_token},
                  {"expert_bytes", model_.shape.min_expert_bytes()}};
  int64_t since = 0;
  if (committed_) {
    since = committed_->committed_ms.value_or(committed_->created_ms);
    out["placement"] = {{"version", committed_->version},   {"policy", committed_->policy},
                        {"trigger", committed_->trigger},   {"committed_ms", since},
                        {"age_s", (wall - since) / 1000.0}, {"nodes", committed_->nodes.size()}};
  } else {
    out["placement"] = nullptr;
  }
  const std::optional<uint64_t> version =
      committed_ ? std::optional<uint64_t>(committed_->version) : std::nullopt;
  DMOE_ASSIGN_OR_RETURN(auto totals, store_->totals_since(since, version));
  DMOE_ASSIGN_OR_RETURN(auto latest, store_->latest_reports());
  int n_up = 0, n_down = 0, n_unknown = 0;
  uint64_t requests = 0, tokens = 0;
  ordered_json list = ordered_json::array();
  for (const auto& [id, m] : membership_.all()) {
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
    const store::NodeTotals t = totals.count(id) ? totals[id] : store::NodeTotals{};
    node["local_hit_ratio_since_adoption"] = optional_number(t.local_hit_ratio());
    node["requests_last_window"] = last != latest.end() ? last->second.requests : 0;
    node["tokens_last_window"] = last != latest.end() ? last->second.tokens : 0;
    node["requests_since_adoption"] = t.requests;
    node["tokens_since_adoption"] = t.tokens;
    node["placement_version"] = m.heartbeat_version;
    requests += t.requests;
    tokens += t.tokens;
    list.push_back(std::move(node));
  }
  out["nodes"] = {{"up", n_up}, {"down", n_down}, {"unknown", n_unknown}, {"list", list}};
  out["served_since_adoption"] = {{"requests", requests}, {"tokens", tokens}};
  DMOE_ASSIGN_OR_RETURN(auto decisions, store_->recent_decisions(1));
  out["last_decision"] = decisions.empty() ? ordered_json(nullptr) : decision_json(decisions[0]);
  if (migration_) {
    const store::MigrationRecord& r = migration_->record();
    out["migration"] = {{"version", migration_->version()},
                        {"from_version", r.from_version},
                        {"trigger", r.trigger},
                        {"started_ms", r.started_ms},
                        {"elapsed_s", (wall - r.started_ms) / 1000.0},
                        {"timeout_s", options_.prepare_timeout_ms / 1000.0},
                        {"bytes", r.bytes},
                        {"ready", migration_->ready()},
                        {"waiting", migration_->waiting()},
                        {"progress", migration_->progress()}};
  } else {
    out["migration"] = nullptr;
  }
  out["counters"] = counters_.to_json();
  return out;
}

Result<ordered_json> SchedulerService::nodes_json() {
  const int64_t since = committed_ ? committed_->committed_ms.value_or(0) : 0;
  const std::optional<uint64_t> version =
      committed_ ? std::optional<uint64_t>(committed_->version) : std::nullopt;
  DMOE_ASSIGN_OR_RETURN(auto totals, store_->totals_since(since, version));
  std::map<std::string, int64_t> held;
  if (committed_) {
    for (const NodePlacement& n : committed_->nodes) {
      for (const DevicePlacement& d : n.devices) held[n.node_id] += d.experts.size();
    }
  }
  const int64_t now = clock_->steady_ms();
  ordered_json list = ordered_json::array();
  for (const auto& [id, m] : membership_.all()) {
    ordered_json devices = ordered_json::array();
    for (const store::DeviceRecord& d : m.record.devices) {
      devices.push_back({{"name", d.name},
                         {"expert_budget_bytes", d.expert_budget_bytes},
                         {"load_bytes_per_s", d.load_bytes_per_s}});
    }
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
  return ordered_json{{"committed_version", committed_version()}, {"nodes", list}};
}

ordered_json SchedulerService::placement_json(const store::PlacementRecord& p,
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
  for (int32_t l : model_.moe_layers) {
    if (layer && l != *layer) continue;
    ordered_json experts = ordered_json::array();
    for (int32_t e = 0; e < model_.n_experts; ++e) {
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
  out["experts_per_layer"] = model_.n_experts;
  out["layers"] = std::move(layers);
  return out;
}

Result<ordered_json> SchedulerService::migrations_json(int limit) {
  DMOE_ASSIGN_OR_RETURN(auto migrations, store_->recent_migrations(limit));
  DMOE_ASSIGN_OR_RETURN(auto decisions, store_->recent_decisions(limit));
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
  if (migration_) {
    // The in-progress one carries its live progress.
    for (auto& row : m) {
      if (row["to_version"] == migration_->version() && row["outcome"] == "preparing") {
        row["progress"] = migration_->progress();
        row["waiting"] = migration_->waiting();
      }
    }
  }
  return ordered_json{{"migrations", m}, {"decisions", d}};
}

Result<ordered_json> SchedulerService::propose_json(const std::string& policy) {
  DMOE_ASSIGN_OR_RETURN(PlanProblem plan, gather_problem());
  DMOE_ASSIGN_OR_RETURN(Candidate c, solve_candidate(plan, policy));
  store::PlacementRecord record;
  record.policy = policy.empty() ? plan.policy : policy;
  record.method = c.placement.method;
  record.trigger = "proposal";
  record.state = "proposed";
  record.nodes = to_wire(c.placement, plan, model_);
  const std::vector<NodePlacement>* from = committed_ ? &committed_->nodes : nullptr;
  return ordered_json{{"policy", record.policy},
                      {"method", record.method},
                      {"note", plan.note},
                      {"solve_ms", c.solve_ms},
                      {"window_s", plan.problem.activations.window_s},
                      {"horizon_s", plan.problem.horizon_s},
                      {"gate",
                       {{"cost_current_s", c.gate.cost_current_s},
                        {"cost_new_s", c.gate.cost_new_s},
                        {"migration_s", c.gate.migration_s},
                        {"adopt", c.gate.adopt},
                        {"coverage_repair", c.gate.coverage_repair}}},
                      {"local_hit_ratio_current", c.costs_current.local_hit_ratio},
                      {"local_hit_ratio_new", c.costs_new.local_hit_ratio},
                      {"migration_bytes", c.migration_bytes},
                      {"moves", moves_json(diff_placements(from, record.nodes, model_))},
                      {"placement", placement_json(record, std::nullopt)}};
}

Result<Candidate> SchedulerService::operator_candidate(const PlanProblem& plan,
                                                       const nlohmann::json& json) {
  DMOE_ASSIGN_OR_RETURN(const ClusterPlacement wanted,
                        placement_from_json(json, kOperatorPlacement, Endpoints::kOptional));
  placement::Placement p = placement::empty_placement(plan.problem.cluster);
  p.method = "operator placement";
  for (const NodePlacement& n : wanted.nodes) {
    const std::string where = "placement.nodes." + n.node_id;
    const auto node = std::find_if(plan.placed.begin(), plan.placed.end(),
                                   [&](const Member* m) { return m->id() == n.node_id; });
    if (node == plan.placed.end()) {
      return invalid_argument(where + ": node '" + n.node_id +
                              "' is not an up node with memory for experts");
    }
    const size_t n_idx = node - plan.placed.begin();
    const auto& devices = plan.problem.cluster.nodes[n_idx].devices;
    for (const DevicePlacement& d : n.devices) {
      const auto device =
          std::find_if(devices.begin(), devices.end(),
                       [&](const placement::Device& g) { return g.id == d.device; });
      if (device == devices.end()) {
        return invalid_argument(where + ".devices." + d.device + ": node '" + n.node_id +
                                "' has no device '" + d.device + "'");
      }
      std::vector<placement::ExpertIndex>& list = p.experts[n_idx][device - devices.begin()];
      for (const ExpertRef& r : d.experts) {
        // Placements name absolute layers; the solvers' indices cover MoE layers only.
        const int32_t x =
            model_.flat(static_cast<uint32_t>(r.layer), static_cast<uint32_t>(r.expert));
        if (x < 0) {
          return invalid_argument(where + ".devices." + d.device + ": layer " +
                                  std::to_string(r.layer) + " expert " + std::to_string(r.expert) +
                                  " is not an expert of the model");
        }
        list.push_back(x);
      }
      std::sort(list.begin(), list.end());
    }
  }
  return evaluate_candidate(plan, std::move(p));
}

}  // namespace dancemoe::scheduler
