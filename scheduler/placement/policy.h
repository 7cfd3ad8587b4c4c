// The placement policies behind one interface, selectable by name.
//
// A policy is a pure function Problem -> Result<Placement>: no I/O, no state,
// no randomness, so the scheduler daemon, the simulator and the CLI get the
// same answer for the same input, and calling any policy from several threads
// at once is safe. One policy per file under scheduler/placement/policies/.
//
//   uniform            one copy of each expert, spread evenly; statistics unused
//   redundance         uniform, then every node fills its spare memory with the
//                      globally most used experts (same everywhere)
//   smartmoe           one copy of each expert, placed to balance the global
//                      load across nodes in proportion to their memory
//   eplb               DeepSeek's EPLB: replicas by load, heaviest first onto
//                      the least-loaded node (load per slot)
//   dancemoe           the paper: entropy-based per-layer counts (Algorithm 1),
//                      top-N per layer with coverage repair (Algorithm 2)
//   optimal            exact optimum of the proxy cost (Eq. 2) under coverage
//                      and memory (min-cost flow; heuristic for unequal sizes)
//   optimal-migration  exact optimum of C(P') + T_mig(P, P') in seconds given
//                      the current placement (the gate's left-hand side)
//   latency            fewest steps waiting for a peer (step_model.h): whole
//                      layers and co-activated experts together, migration-
//                      aware; its gate compares the latency cost C_lat
//
// Design notes and measurements: docs/placement-report.md.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/base/status.h"
#include "scheduler/placement/costs.h"
#include "scheduler/placement/types.h"

namespace dancemoe::placement {

struct PolicyInfo {
  std::string_view name;
  std::string_view summary;
  // Takes a validated problem (validate_problem); returns a placement that
  // covers every expert and respects every device's memory, or an error.
  Result<Placement> (*place)(const Problem& problem);
  // What it minimises: the gate compares C in these terms (costs.h).
  Objective objective = Objective::kActivations;
};

// Every policy, in a fixed order: baselines, the paper's, the exact ones, latency.
std::span<const PolicyInfo> all_policies();

// nullptr when no policy has that name.
const PolicyInfo* find_policy(std::string_view name);

// "dancemoe, uniform, ..." for messages and --help.
std::string policy_names();

// Validates the problem, runs the named policy and checks its result
// (coverage, memory; a violation is an internal error, i.e. a policy bug).
// Unknown names are invalid_argument listing the known ones.
Result<Placement> solve(std::string_view policy_name, const Problem& problem);

}  // namespace dancemoe::placement
