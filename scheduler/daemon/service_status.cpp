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
//   admit, revoke, forget                        keys and nodes (service_members.cpp)
// Reading (status, nodes, placement, migrations, propose) needs a node or an
// operator key; everything that changes the cluster (round, apply, admit,
// revoke, forget) an operator key (docs/security.md).
// A placement, in replies and in `apply`, is in its one JSON form
// (common/placement/placement_json.h); a reply adds what the scheduler knows
// of it (policy, state, times) and per layer the holders of each expert.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/base/json_nesting.h"
#include "scheduler/daemon/service.h"
#include "scheduler/daemon/status_query.h"
#include "scheduler/placement/policy.h"

namespace dancemoe::scheduler {
namespace {

using nlohmann::ordered_json;

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

bool changes_cluster(const std::string& what) {
  return what == "round" || what == "apply" || what == "admit" || what == "revoke" ||
         what == "forget";
}

}  // namespace

void SchedulerService::on_status(const std::string& routing_id, const proto::Envelope& env,
                                 const proto::StatusRequest& request, const Principal& who) {
  ++counters_.status_requests;
  if (changes_cluster(request.what) && !who.operator_key) {
    reject(routing_id, env.sequence,
           failed_precondition("'" + request.what +
                               "' changes the cluster and needs an operator key; key '" + who.name +
                               "' is a node key"),
           Rejection::kNotPermitted);
    return;
  }
  nlohmann::json args = nlohmann::json::object();
  if (!request.arguments_json.empty()) {
    if (Status deep = check_json_nesting(request.arguments_json, "StatusRequest.arguments_json");
        !deep.is_ok()) {
      reject(routing_id, env.sequence, deep, Rejection::kInvalidRequest);
      return;
    }
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

Result<ordered_json> SchedulerService::read_only_query(const std::string& what,
                                                       const nlohmann::json& args) {
  if (what != "status" && what != "nodes" && what != "placement" && what != "migrations") {
    return invalid_argument("'" + what +
                            "' is not a read-only query (status, nodes, placement, migrations); "
                            "proposals and changes go through the control port");
  }
  return status_query(what, args);
}

Result<ordered_json> SchedulerService::operator_query(const std::string& what,
                                                      const nlohmann::json& args) {
  if (!changes_cluster(what)) {
    return invalid_argument("'" + what + "' is not a change (round, apply, admit, revoke, forget)");
  }
  return status_query(what, args);
}

Result<ordered_json> SchedulerService::status_query(const std::string& what,
                                                    const nlohmann::json& args) {
  const StatusView view{options_,   model_,     *store_,   *clock_,    membership_,
                        committed_, migration_, counters_, started_ms_};
  const StatusQuery query(view);
  if (what == "status") {
    DMOE_ASSIGN_OR_RETURN(ordered_json status, query.status());
    status["security"] = {{"curve", keys_.secure()},
                          {"node_keys", keys_.node_keys().size()},
                          {"operator_keys", keys_.n_operator_keys()},
                          {"members_version", members_.version}};
    return status;
  }
  if (what == "nodes") {
    DMOE_ASSIGN_OR_RETURN(ordered_json nodes, query.nodes());
    for (ordered_json& n : nodes["nodes"]) {
      const auto bound = bindings_.find(n.value("id", std::string()));
      n["key"] = bound == bindings_.end() ? ordered_json() : ordered_json(bound->second.key_name);
    }
    return nodes;
  }
  if (what == "placement") {
    DMOE_ASSIGN_OR_RETURN(const int64_t layer, int_argument(args, "layer", -1));
    return query.placement(layer >= 0 ? std::optional<int>(static_cast<int>(layer)) : std::nullopt);
  }
  if (what == "migrations") {
    DMOE_ASSIGN_OR_RETURN(const int64_t limit, int_argument(args, "limit", 20));
    return query.migrations(static_cast<int>(std::clamp<int64_t>(limit, 1, 1000)));
  }
  if (what == "propose") {
    DMOE_ASSIGN_OR_RETURN(const std::string policy, policy_argument(args));
    return propose_json(policy, query);
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
    return StatusQuery::decision_json(run_round(request));
  }
  if (what == "admit") return admit_key(args);
  if (what == "revoke") return revoke_key(args);
  if (what == "forget") return forget_node(args);
  return invalid_argument("unknown status query '" + what +
                          "' (expected status, nodes, placement, migrations, propose, round, "
                          "apply, admit, revoke or forget)");
}

Result<ordered_json> SchedulerService::propose_json(const std::string& policy,
                                                    const StatusQuery& query) {
  DMOE_ASSIGN_OR_RETURN(PlanProblem plan, gather_problem());
  DMOE_ASSIGN_OR_RETURN(Candidate c, solve_candidate(plan, model_, policy));
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
                      {"placement", query.placement_json(record, std::nullopt)}};
}

}  // namespace dancemoe::scheduler
