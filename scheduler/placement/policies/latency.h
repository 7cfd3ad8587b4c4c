// `latency`: placement for the latency users feel (issue 17). It minimises
// C_lat (step_model.h) -- the expected number of (token, layer) steps that
// wait for a peer, and of steps that wait for a second one -- plus, when a
// placement is in force, the time to load what changes: the same trade as
// `optimal-migration`, in the terms that predict latency. Its gate compares
// C_lat (policy.h). Design and measurements: docs/placement-latency.md.
//
// Why not the paper's objective: any remote expert makes a step wait, so a
// node gains little from holding 30 % of every layer (few steps find all k
// experts local) and much from holding whole layers, or the part of a layer
// its tokens actually use together. The value of a node's set in a layer is
// convex in its size, so greedy expert-by-expert choices (the paper's, or
// the exact solver's linear weights) never find it.
//
// Steps (equal or unequal expert sizes; memory in bytes, whole experts):
//   1. Chains. For each node n and layer l, a nested family of sets, one per
//      size: start from the whole layer and repeatedly drop the expert whose
//      loss is least -- w_n T F(S) lost, minus the load time saved when n does
//      not hold it yet -- with F the co-activation-aware estimate, so experts
//      routed together leave together (JANUS-style co-location, per node).
//      value_nl(s) = w_n T_nl F(prefix s) + H / window_s * t_c * f(prefix s)
//      - load(prefix s) in seconds over the horizon, with w_n = H / window_s *
//      d_n, d_n and t_c the step and activation costs of step_model.h, and F
//      made non-decreasing in s (the true F is).
//   2. Blocks. Greedily grow one (node, layer) prefix at a time to the size
//      with the best value gained per byte, while (a) the node has room and
//      (b) the memory left anywhere still holds one copy of every expert no
//      prefix covers yet (coverage stays feasible). Gains within 0.1 % count
//      as equal; then the block that covers more uncovered experts wins, so
//      nodes take different layers (one holder per layer: a remote step waits
//      for one peer), then lower node and layer. A node may keep room empty
//      when nothing it could load pays for itself over the horizon.
//   3. Fill. The exact coverage solver (weighted_choice.h) keeps every block
//      (they weigh more than everything else together), covers the rest, and
//      gives the remaining room to the experts whose addition saves most --
//      the rise of F, and t_c per activation (or, when t_c is unknown, a
//      thousandth of a step per activation: popular experts first) -- minus
//      their load time.
//   4. Safeguard. The result competes with `optimal`, `uniform` (pure
//      coverage) and the current placement on C_lat + T_mig; the cheapest
//      wins (ties: current, then this result), so the policy is never worse
//      on its own objective than those. Placement::method says which won.
//
// Needs Activations::experts_per_token (invalid_argument without it).
// Pure function; safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/placement/step_model.h"

namespace dancemoe::placement {

// Step 1 for one node and layer (experts indexed within the layer).
struct LayerChain {
  std::vector<int32_t> order;  // experts, most valuable first: prefix s = the set of size s
  std::vector<double> value;   // [s], s = 0..n_experts: seconds over the horizon
};

struct ChainPrices {
  double step_value_s = 0.0;        // w_n: seconds saved per step made fully local
  double activation_value_s = 0.0;  // seconds saved per activation made local
  std::span<const double> load_s;   // [expert]: seconds to load it on this node
                                    // (0 when it holds it, or on a fresh start)
};

LayerChain build_chain(const LayerSteps& steps, const ChainPrices& prices);

}  // namespace dancemoe::placement
