#include "scheduler/placement/step_model.h"

#include <algorithm>
#include <cmath>

namespace dancemoe::placement {
namespace {

LayerSteps layer_steps(const std::vector<double>& f, int32_t first, int32_t n_experts, int32_t k) {
  LayerSteps s;
  s.k = k;
  double total = 0.0;
  for (int32_t e = 0; e < n_experts; ++e) total += f[first + e];
  s.steps = total / k;
  s.log_q.resize(n_experts);
  s.use.resize(n_experts);
  s.links.resize(n_experts);
  const double t = s.steps;
  for (int32_t e = 0; e < n_experts; ++e) {
    const double fe = std::min(f[first + e], t);
    s.log_q[e] = std::log((t - fe + 0.5) / (t + 1.0));
    s.use[e] = t > 0 ? fe / t : 0.0;
  }
  return s;
}

void add_pair(LayerSteps& s, int32_t a, int32_t b, double count) {
  const double t = s.steps;
  if (t <= 0) return;
  const double fa = s.use[a] * t;
  const double fb = s.use[b] * t;
  // A pair cannot be routed together more often than either expert, nor
  // less often than the overlap the marginals force.
  const double c = std::clamp(count, std::max(0.0, fa + fb - t), std::min(fa, fb));
  const double log_r = std::log((t - fa - fb + c + 0.5) / (t + 1.0)) - s.log_q[a] - s.log_q[b];
  s.links[a].push_back({b, log_r, c / t});
  s.links[b].push_back({a, log_r, c / t});
  s.pairs.push_back({a, b, c / t});
}

// Union-find over a layer's experts, for the spanning forest.
int32_t root(std::vector<int32_t>& parent, int32_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

double sequential_estimate(double inside_share, double inside_square, int32_t k) {
  if (inside_share <= 0) return 0.0;
  // Draw j of the token lands in S given the j before did: (m - j a) / (1 - j a),
  // a = the expected share of an expert drawn from S (sum w^2 / m).
  const double a = inside_square / inside_share;
  double p = 1.0;
  for (int32_t j = 0; j < k && p > 0; ++j) {
    p *= std::max(0.0, (inside_share - j * a) / (1.0 - j * a));
  }
  return p;
}

double LayerSteps::pair_lower_bound(std::span<const uint8_t> held) const {
  double outside_use = 0.0;
  for (size_t e = 0; e < use.size(); ++e) outside_use += held[e] ? 0.0 : use[e];
  // Hunter's bound: P(union) <= sum P(A_e) - sum over the edges of a maximum
  // spanning forest of P(A_e and A_e'); listed pairs only (the others weigh
  // at least 0), heaviest first (pairs is kept sorted).
  std::vector<int32_t> parent(use.size());
  for (size_t e = 0; e < parent.size(); ++e) parent[e] = static_cast<int32_t>(e);
  double tree = 0.0;
  for (const Pair& p : pairs) {
    if (held[p.a] || held[p.b]) continue;
    const int32_t ra = root(parent, p.a), rb = root(parent, p.b);
    if (ra == rb) continue;
    parent[ra] = rb;
    tree += p.share;
  }
  return std::max(0.0, 1.0 - outside_use + tree);
}

double LayerSteps::fully_local(std::span<const uint8_t> held) const {
  if (steps <= 0) return 1.0;
  double outside_use = 0.0, upper = 1.0, inside_share = 0.0, inside_square = 0.0;
  bool any_outside = false;
  for (size_t e = 0; e < log_q.size(); ++e) {
    const double w = use[e] / k;
    if (held[e]) {
      inside_share += w;
      inside_square += w * w;
      continue;
    }
    any_outside = true;
    outside_use += use[e];
    upper = std::min(upper, std::exp(log_q[e]));
  }
  if (!any_outside) return 1.0;
  const double lower = pairs.empty() ? std::max(0.0, 1.0 - outside_use) : pair_lower_bound(held);
  return bounded(sequential_estimate(inside_share, inside_square, k), lower, upper);
}

double LayerSteps::coactivation_estimate(std::span<const uint8_t> held) const {
  if (steps <= 0) return 1.0;
  double log_f = 0.0;
  bool any_outside = false;
  for (size_t e = 0; e < log_q.size(); ++e) {
    if (held[e]) continue;
    any_outside = true;
    log_f += log_q[e];
    for (const Link& link : links[e]) {
      if (static_cast<size_t>(link.other) > e && !held[link.other]) log_f += link.log_r;
    }
  }
  return any_outside ? std::exp(log_f) : 1.0;
}

Result<StepModel> StepModel::create(const Problem& problem) {
  const int32_t k = problem.activations.experts_per_token;
  if (k <= 0) {
    return invalid_argument(
        "experts_per_token: the latency model needs how many experts each token picks per "
        "layer (top-k), got " +
        std::to_string(k));
  }
  const ModelShape& model = problem.model;
  StepModel out;
  double compute_sum = 0.0;
  int n_measured = 0;
  for (const Node& node : problem.cluster.nodes) {
    if (node.expert_compute_s > 0) {
      compute_sum += node.expert_compute_s;
      ++n_measured;
    }
  }
  out.remote_compute_s_ = n_measured > 0 ? compute_sum / n_measured : 0.0;
  out.k_ = k;
  out.layers_.resize(problem.cluster.nodes.size());
  for (size_t n = 0; n < out.layers_.size(); ++n) {
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      out.layers_[n].push_back(
          layer_steps(problem.activations.counts[n], model.offset(l), model.n_experts(l), k));
    }
    if (n >= problem.activations.pairs.size()) continue;
    for (const PairCount& p : problem.activations.pairs[n]) {
      const int32_t l = model.layer_of(p.a);
      add_pair(out.layers_[n][l], model.expert_in_layer(p.a), model.expert_in_layer(p.b), p.count);
    }
    for (LayerSteps& s : out.layers_[n]) {
      std::stable_sort(
          s.pairs.begin(), s.pairs.end(),
          [](const LayerSteps::Pair& x, const LayerSteps::Pair& y) { return x.share > y.share; });
    }
  }
  return out;
}

double StepModel::step_penalty_s(const Node& node) const {
  return std::max(0.0, node.remote_penalty_s - k_ * remote_compute_s_);
}

StepCosts evaluate_steps(const Problem& problem, const StepModel& steps,
                         const Placement& placement) {
  StepCosts costs;
  const ModelShape& model = problem.model;
  const auto holds = node_holdings(placement, model.n_experts_total());
  const size_t n_nodes = problem.cluster.nodes.size();
  const double scale = problem.horizon_s / problem.activations.window_s;
  std::vector<uint8_t> both;
  for (size_t n = 0; n < n_nodes; ++n) {
    const double delta = steps.step_penalty_s(problem.cluster.nodes[n]);
    double remote = 0.0, extra = 0.0, activations = 0.0;
    for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
      if (!holds[n][x]) activations += problem.activations.counts[n][x];
    }
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      const LayerSteps& s = steps.at(n, l);
      costs.steps += s.steps;
      if (s.steps <= 0) continue;
      const auto mine =
          std::span<const uint8_t>(holds[n]).subspan(model.offset(l), model.n_experts(l));
      const double local = s.fully_local(mine);
      // The peer that completes n's set best; a second peer is needed when
      // even it lacks an expert of the step.
      double best = local;
      for (size_t m = 0; m < n_nodes && local < 1.0; ++m) {
        if (m == n) continue;
        both.assign(mine.begin(), mine.end());
        for (int32_t e = 0; e < model.n_experts(l); ++e) both[e] |= holds[m][model.offset(l) + e];
        best = std::max(best, s.fully_local(both));
      }
      remote += s.steps * (1.0 - local);
      extra += s.steps * (1.0 - best);
    }
    costs.remote_steps += remote;
    costs.extra_peer_steps += extra;
    costs.remote_activations += activations;
    costs.cost_s += scale * (delta * (remote + kExtraPeerShare * extra) +
                             steps.remote_compute_s() * activations);
  }
  return costs;
}

}  // namespace dancemoe::placement
