// Cost functions of a placement and the migration gate (DESIGN.md §5.2, §5.5;
// the paper's Eqs. 2-4).
//
//   proxy cost (activations)  A(P) = sum_n sum_x f[n][x] * remote_P(n, x)
//   proxy cost (seconds)      C(P) = sum_n sum_x rate[n][x] * H * delta[n] * remote_P(n, x)
//                                  with rate = f / window_s, H = horizon_s,
//                                  delta[n] = nodes[n].remote_penalty_s
//   local-hit ratio           1 - A(P) / sum f   (1 when nothing was observed)
//   migration time            T_mig(P, P') = sum over (n, g, x) held by P' and not by P
//                                  of bytes(x) / devices[n][g].load_bytes_per_s
//   gate                      adopt P' iff C(P') + T_mig(P, P') < C(P)
//                             (C is the proxy cost above, or the latency cost
//                             C_lat of step_model.h for policies that minimise it)
//
// T_mig counts what a node must load. An expert that appears on a device of
// P' where P did not have it costs one load on that device: a brand-new
// replica, a move between nodes (counted at the destination) and a move
// between two devices of one node (reloaded on the new device) all count
// once. Evictions cost nothing: dropping weights takes no transfer.
//
// Coverage loss bypasses the gate (DESIGN.md §5.5): when P does not cover
// every expert (a node died), P' is adopted whatever the numbers say.
//
// Pure functions; safe from any thread. The placements must match the
// problem's shape (validate with check_placement first).
#pragma once

#include <cstdint>

#include "scheduler/placement/types.h"

namespace dancemoe::placement {

struct PlacementCosts {
  double proxy_cost = 0.0;       // A(P), activations
  double proxy_cost_s = 0.0;     // C(P), seconds over the horizon
  double local_hit_ratio = 1.0;  // share of activations served locally
  double total_activations = 0.0;
};

PlacementCosts evaluate_costs(const Problem& problem, const Placement& placement);

double proxy_cost_activations(const Problem& problem, const Placement& placement);
double proxy_cost_s(const Problem& problem, const Placement& placement);
double local_hit_ratio(const Problem& problem, const Placement& placement);

// T_mig(from, to) in seconds, and the bytes it loads.
double migration_s(const Problem& problem, const Placement& from, const Placement& to);
uint64_t migration_bytes(const Problem& problem, const Placement& from, const Placement& to);

// What a policy minimises, and so what its gate compares (policy.h).
enum class Objective {
  kActivations,  // the paper's proxy cost C(P) above: remote activations x delta
  kLatency,      // C_lat (step_model.h): steps that wait for a peer, and second peers
};

struct GateDecision {
  double cost_current_s = 0.0;  // C(P)
  double cost_new_s = 0.0;      // C(P')
  double migration_s = 0.0;     // T_mig(P, P')
  bool adopt = false;
  bool coverage_repair = false;  // P left an expert uncovered: adopted without the test
};

// C(P) and C(P') in the given objective's terms (T_mig is the same for
// both). kLatency needs Activations::experts_per_token; without it the gate
// compares the proxy cost.
GateDecision evaluate_gate(const Problem& problem, const Placement& current,
                           const Placement& proposed,
                           Objective objective = Objective::kActivations);

// C(P) in the objective's terms, seconds over the horizon.
double objective_cost_s(const Problem& problem, const Placement& placement, Objective objective);

}  // namespace dancemoe::placement
