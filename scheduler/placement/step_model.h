// The latency model of a placement (issue 17; docs/placement-latency.md).
//
// A (token, layer) step waits for the network when ANY of the token's k
// experts of that layer is remote, so what users feel is the share of steps
// whose experts are all local and, for the others, how many peers a step
// waits for -- not the share of local activations that the paper's proxy
// cost counts (costs.h).
//
// Fully-local probability. For node n, layer l, and the set S of experts n
// holds there, with T steps (T = the layer's counts / k), a step is fully
// local with probability F(S) = P(no routed expert outside S), estimated
// from the per-expert counts f_e and the co-activation counts c_ee'.
//
// This "sequential" estimate draws the token's k experts one after another
// without replacement, in proportion to the activation shares w_e = f_e / (k T):
//
//   F(S) ~= prod_{j<k} (m - j a) / (1 - j a),   m = sum_{e in S} w_e,
//                                               a = sum_{e in S} w_e^2 / m
//
// exact for uniform routing (C(s,k) / C(E,k)), and on the shared OLMoE trace
// and the synthetic Zipf routings low by 0.00-0.08 (it knows nothing of
// co-activation, which on real routing raises F): a conservative estimate.
//
// Co-activation. The counts c_ee' of pairs routed together give two more:
//   - a rigorous lower bound (Hunter's inequality): F(S) >= 1 - sum_{e not in S} f_e / T
//     + sum over a maximum spanning forest of the outside experts of c_ee' / T,
//     tight when few experts are outside; F is the larger of it and the
//     sequential estimate;
//   - the second-order estimate
//       log F(S) ~= sum_{e not in S} log q_e + sum_{listed pairs e<e', both not in S} log r_ee'
//       q_e = (T - f_e + 1/2) / (T + 1),  r_ee' = q_ee' / (q_e q_e'),
//       q_ee' = (T - f_e - f_e' + c_ee' + 1/2) / (T + 1)
//     which says which experts to leave out together (latency.h orders its
//     sets by it) but is no value: its positive corrections pile up, so it
//     overestimates -- on sets of 16-56 of 64 experts near the most used of
//     the OLMoE trace by 0.29 on average with every pair and 0.08 with the
//     pairs nodes report (bench_coactivation; docs/placement-latency.md),
//     more on the sets a policy picks *because* they look good under it.
// Whatever the estimate, F stays within bounds that hold for any routing:
//   max(0, 1 - sum_{e not in S} f_e / T) <= F(S) <= min_{e not in S} q_e
// (half a step of smoothing keeps q positive for an expert every token used).
//
// Cost of a placement in seconds over the horizon H, against every step
// fully local:
//   C_lat(P) = sum_n (H / window_s) sum_l ( T_nl [ d_n (1 - F(S_nl))
//                                                + gamma_n (1 - F(S_nl u S_ml*)) ]
//                                         + t_c * sum_{e not in S_nl} f_nle )
// A fully-local step computes its k experts (k t_c); a step that waits for a
// peer takes the round trip delta_n and the peer's compute of its remote
// experts, while the local ones run meanwhile. So a remote step costs
// d_n = max(0, delta_n - k t_c) plus t_c per remote activation (the third
// term), t_c = the mean measured Node::expert_compute_s of the nodes that
// have one (0 if none): for small experts (OLMoE's 12 MB, 30 us) the round
// trip dominates, for large ones (Mixtral's 350 MB, 0.4 ms) a remote
// activation costs nearly as much as the round trip itself. The second term
// prices a step that needs a second peer: m* is the peer whose set completes
// n's best, and a step needs more than one peer when even m* lacks one of
// its experts (the count of distinct peers is thus approximated as at most
// two); gamma_n = kExtraPeerShare * d_n.
//
// Values; pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/types.h"

namespace dancemoe::placement {

// Cost of a step that waits for a second peer, as a share of a node's
// remote penalty delta[n]: replies arrive in parallel, so a second peer
// costs the spread of the slower reply, not another round trip.
inline constexpr double kExtraPeerShare = 0.25;

// One node's statistics at one layer, in the estimator's terms. Experts are
// indexed within the layer (0..n_experts-1).
struct LayerSteps {
  struct Link {
    int32_t other = 0;
    double log_r = 0.0;
    double share = 0.0;  // c / T
  };
  struct Pair {
    int32_t a = 0;
    int32_t b = 0;
    double share = 0.0;  // c / T
  };
  int32_t k = 1;                         // experts per token
  double steps = 0.0;                    // T
  std::vector<double> log_q;             // [expert] log P(not routed)
  std::vector<double> use;               // [expert] f_e / T, at most 1
  std::vector<std::vector<Link>> links;  // [expert] its listed pairs, both directions
  std::vector<Pair> pairs;               // every listed pair once, largest share first

  // F(S) for S = {e : held[e] != 0}: the larger of the sequential estimate
  // and the pair lower bound, within the bounds; 1 when every expert is held
  // or T = 0.
  double fully_local(std::span<const uint8_t> held) const;
  // Hunter's lower bound from the listed pairs (above).
  double pair_lower_bound(std::span<const uint8_t> held) const;
  // The second-order co-activation estimate, unbounded (for ordering only).
  double coactivation_estimate(std::span<const uint8_t> held) const;
};

// std::clamp that tolerates crossed bounds (the smoothed upper bound can
// fall a hair below the exact lower one): the upper bound wins.
inline double bounded(double x, double lower, double upper) {
  return x < lower ? (lower < upper ? lower : upper) : (x > upper ? upper : x);
}

// prod_{j<k} (m - j a) / (1 - j a) with m = the share S holds of the layer's
// activations and a = sum_{e in S} w_e^2 / m (see above).
double sequential_estimate(double inside_share, double inside_square, int32_t k);

// Every (node, layer) of a problem.
class StepModel {
 public:
  // invalid_argument when the problem does not say how many experts a token
  // picks (Activations::experts_per_token == 0). Takes a validated problem.
  static Result<StepModel> create(const Problem& problem);

  const LayerSteps& at(size_t node, int32_t layer) const { return layers_[node][layer]; }
  size_t n_nodes() const { return layers_.size(); }
  // t_c: seconds of peer compute per remote activation (see above).
  double remote_compute_s() const { return remote_compute_s_; }
  // d_n: seconds a step of node n waits for a peer beyond its own compute.
  double step_penalty_s(const Node& node) const;

 private:
  std::vector<std::vector<LayerSteps>> layers_;  // [node][layer]
  double remote_compute_s_ = 0.0;
  int32_t k_ = 1;
};

struct StepCosts {
  double steps = 0.0;               // sum of T over nodes and layers
  double remote_steps = 0.0;        // expected steps with a remote expert
  double extra_peer_steps = 0.0;    // expected steps that need a second peer
  double remote_activations = 0.0;  // A(P) of costs.h
  double cost_s = 0.0;              // C_lat over the horizon, seconds
  double local_step_ratio() const { return steps > 0 ? 1.0 - remote_steps / steps : 1.0; }
};

StepCosts evaluate_steps(const Problem& problem, const StepModel& model,
                         const Placement& placement);

}  // namespace dancemoe::placement
