// One placement round's computation, without I/O: turn membership and the
// stored statistics into a placement Problem (DESIGN.md §5.1), solve it with
// a policy, and evaluate the migration gate (§5.5) against the committed
// placement. The service (service.h) reads the inputs, records the decision
// and runs the migration.
//
// Inputs and the decisions taken here:
//   - Nodes: the up nodes. A node whose devices cannot hold one expert (a thin
//     client) is left out of the problem and receives the placement only to
//     route ("routing only").
//   - f[n][l][e]: counts since the committed placement was adopted (the
//     paper's window); before any placement, all retained history.
//   - delta[n] = mean remote - mean local expert-call latency of node n
//     (calls-weighted over its reports) in the window, else over all retained
//     history, else the median of the nodes that measured both, else
//     `default_remote_penalty_s`. A negative difference (remote faster than
//     local, e.g. a CPU node calling a GPU peer) is clamped to 0: locality
//     then does not help that node, and the cost treats it as indifferent.
//   - speed[n][g] = Register.devices[g].load_bytes_per_s, or
//     `default_load_bytes_per_s` when a device reports 0.
//   - compute cost of device g of node n (placement::Device::compute_cost):
//     when every device of the node has computed at least
//     `min_measured_pairs` pairs (decayed totals of its reports), its
//     measured microseconds per pair; otherwise a prior by kind for all of
//     the node's devices (cpu 1, cuda 0.1), so a node's devices are always
//     compared in one unit. Packing sends a node's hot experts to its fast
//     devices (packing.h).
//   - co-activation pairs per node (the latency policy's input), summed over
//     the same window as the counts; the experts each token picks (top-k) from
//     the model; a node's expert_compute_s is the mean measured microseconds
//     per pair of its measured devices (0 when none is measured yet).
//   - H = the configured horizon (default: the placement period).
//   - the gate compares C in the terms of the policy that ran (policy.h: the
//     paper's proxy cost, or the latency cost of `latency`).
//
// Cold start (no committed placement yet):
//   - no node has any statistics: the `uniform` policy -- one copy of every
//     expert, spread over the nodes in proportion to their memory; spare
//     memory stays empty until the first round with statistics fills it;
//   - some nodes have history (e.g. a database from an earlier run): every
//     node without history is given the cluster-wide distribution (the sum
//     over the nodes with history, scaled to their mean total) and the
//     configured policy runs on that.
// In both cases the gate is bypassed: there is nothing to compare with.
//
// Migration headroom: a node loads its new experts beside the ones it
// serves, so during a migration it holds resident + loaded bytes, at most
// its expert budget plus the headroom its Register announced (the node
// refuses a prepare beyond that). A solved candidate that would have a node
// load more is staged (fit_migration_headroom): starting from what the nodes
// hold, each node loads what fits -- first experts no node holds, then its
// most used -- and makes room only by dropping experts the candidate drops
// and another node still holds, so a stage never covers less than the
// current placement; the next round moves on. Without this a repair that
// reshuffled a full node was adopted, aborted by the node and retried every
// few seconds, and coverage never came back.
//
// Pure functions of their inputs; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/daemon/membership.h"
#include "scheduler/daemon/model_info.h"
#include "scheduler/placement/costs.h"
#include "scheduler/placement/types.h"
#include "scheduler/store/records.h"

namespace dancemoe::scheduler {

struct PlannerOptions {
  // The default: placement for latency (docs/placement-latency.md says why).
  std::string policy = "latency";
  double horizon_s = 300.0;
  double default_remote_penalty_s = 0.002;
  double default_load_bytes_per_s = 1.0e9;
  double min_measured_pairs = 1000.0;
};

// The compute cost of each device of a node (see above).
std::vector<double> device_compute_costs(const std::vector<store::DeviceRecord>& devices,
                                         const PlannerOptions& options);

struct PlanInputs {
  std::vector<const Member*> nodes;                         // up nodes
  std::map<std::string, std::vector<double>> counts;        // window, dense over the model index
  std::map<std::string, store::Store::PairCounts> pairs;    // window, co-activation
  std::map<std::string, store::NodeTotals> window_totals;   // window
  std::map<std::string, store::NodeTotals> history_totals;  // all retained
  double window_s = 0.0;
  const store::PlacementRecord* current = nullptr;  // committed placement, if any
};

struct PlanProblem {
  placement::Problem problem;
  std::vector<const Member*> placed;                // problem.cluster.nodes[i] is placed[i]
  std::vector<const Member*> routing_only;          // up, but no memory for experts
  std::map<std::string, std::string> delta_source;  // node -> how delta was obtained
  bool cold_start = false;
  std::string policy;  // the policy to run (uniform on a cold start without statistics)
  std::string note;    // what the statistics were (for the decision record)
};

Result<PlanProblem> build_problem(const ModelInfo& model, const PlanInputs& inputs,
                                  const PlannerOptions& options);

// A stored placement in the problem's terms: nodes and devices matched by
// id and name; what the problem does not have (a dead node, a device gone)
// is dropped, so the result may leave experts uncovered.
placement::Placement to_library(const store::PlacementRecord& record, const PlanProblem& plan,
                                const ModelInfo& model);

// A solved placement as stored / sent: every placed node with its devices,
// then the routing-only nodes with no experts.
std::vector<NodePlacement> to_wire(const placement::Placement& placement, const PlanProblem& plan,
                                   const ModelInfo& model);

struct Candidate {
  placement::Placement placement;
  placement::Placement current;  // P in library form (empty when none)
  placement::GateDecision gate;
  placement::PlacementCosts costs_current;
  placement::PlacementCosts costs_new;
  uint64_t migration_bytes = 0;
  double solve_ms = 0.0;
};

// Replaces `placement` by its stage when some node would load beyond its
// migration headroom (see above); returns the ids of those nodes (empty:
// `placement` is unchanged). A node that announced no headroom (protocol
// 1.0) has no limit.
std::vector<std::string> fit_migration_headroom(const PlanProblem& plan, const ModelInfo& model,
                                                placement::Placement* placement);

// Solves with `plan.policy` (or `policy_override` when non-empty), stages
// it to the nodes' migration headroom, and evaluates the gate. Without a
// current placement the gate adopts (coverage_repair is set: nothing covers
// anything yet).
Result<Candidate> solve_candidate(const PlanProblem& plan, const ModelInfo& model,
                                  const std::string& policy_override);

// The gate and costs of a given placement (an operator's), after checking
// it against the problem: shape, coverage, memory and every node's
// migration headroom (an operator's placement is refused, not staged).
Result<Candidate> evaluate_candidate(const PlanProblem& plan, const ModelInfo& model,
                                     placement::Placement placement);

// Per node: experts gained and dropped, and bytes it must load.
struct NodeMoves {
  std::string node_id;
  int64_t added = 0;
  int64_t removed = 0;
  int64_t kept = 0;
  uint64_t load_bytes = 0;
};
std::vector<NodeMoves> diff_placements(const std::vector<NodePlacement>* from,
                                       const std::vector<NodePlacement>& to,
                                       const ModelInfo& model);

// True when the up nodes of `record` (per `membership`) hold every expert.
bool covers_all(const store::PlacementRecord& record, const Membership& membership,
                const ModelInfo& model);

}  // namespace dancemoe::scheduler
