#include "scheduler/placement/synthetic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "scheduler/placement/validate.h"

namespace dancemoe::placement {

RoutingProfile make_routing_profile(const ModelShape& model, const RoutingProfileSpec& spec) {
  std::mt19937 rng(spec.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  RoutingProfile profile;
  const int32_t n_tasks = std::max<int32_t>(spec.n_tasks, 1);
  std::vector<std::vector<int32_t>> common(model.n_layers());
  for (int32_t l = 0; l < model.n_layers(); ++l) {
    common[l].resize(model.n_experts(l));
    std::iota(common[l].begin(), common[l].end(), 0);
    std::shuffle(common[l].begin(), common[l].end(), rng);
  }
  profile.probability.resize(n_tasks);
  profile.zipf_s.resize(n_tasks);
  for (int32_t t = 0; t < n_tasks; ++t) {
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      const int32_t e = model.n_experts(l);
      // A task's ranking: each position keeps the common expert with
      // probability shared_ranking, the rest are shuffled among themselves.
      std::vector<int32_t> ranking = common[l];
      std::vector<int32_t> free_pos;
      for (int32_t r = 0; r < e; ++r) {
        if (unit(rng) >= spec.shared_ranking) free_pos.push_back(r);
      }
      std::vector<int32_t> moved;
      for (int32_t r : free_pos) moved.push_back(ranking[r]);
      std::shuffle(moved.begin(), moved.end(), rng);
      for (size_t i = 0; i < free_pos.size(); ++i) ranking[free_pos[i]] = moved[i];
      const double s = spec.zipf_min + (spec.zipf_max - spec.zipf_min) * unit(rng);
      std::vector<double> p(e, 0.0);
      double sum = 0.0;
      for (int32_t r = 0; r < e; ++r) {
        p[ranking[r]] = 1.0 / std::pow(r + 1.0, s);
        sum += p[ranking[r]];
      }
      for (double& v : p) v /= sum;
      profile.probability[t].push_back(std::move(p));
      profile.zipf_s[t].push_back(s);
    }
  }
  return profile;
}

Problem make_synthetic_problem(const SyntheticProblemSpec& spec) {
  Problem problem;
  problem.model = ModelShape(spec.layers);
  problem.horizon_s = spec.horizon_s;
  problem.activations.window_s = spec.window_s;
  std::mt19937 rng(spec.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double model_bytes = static_cast<double>(problem.model.total_expert_bytes());
  for (int32_t n = 0; n < spec.n_nodes; ++n) {
    Node node;
    // Appended, not "n" + ...: GCC 12 at -O3 warns falsely (-Wrestrict) on the latter.
    node.id = "n";
    node.id += std::to_string(n);
    node.remote_penalty_s = spec.remote_penalty_s;
    const int32_t n_devices =
        spec.devices_min +
        static_cast<int32_t>(unit(rng) * (spec.devices_max - spec.devices_min + 1) * 0.999999);
    const double fraction = spec.memory_fraction_min +
                            (spec.memory_fraction_max - spec.memory_fraction_min) * unit(rng);
    for (int32_t g = 0; g < n_devices; ++g) {
      Device device;
      device.id = "gpu" + std::to_string(g);
      device.expert_budget_bytes = static_cast<uint64_t>(model_bytes * fraction / n_devices);
      device.load_bytes_per_s = spec.load_bytes_per_s;
      node.devices.push_back(device);
    }
    problem.cluster.nodes.push_back(std::move(node));
  }
  // Every device holds at least one expert of any layer; then raise budgets
  // until every expert fits once (counted in whole experts).
  uint64_t largest = 0;
  for (const LayerShape& layer : spec.layers) largest = std::max(largest, layer.expert_bytes);
  for (Node& node : problem.cluster.nodes) {
    for (Device& device : node.devices) {
      device.expert_budget_bytes = std::max(device.expert_budget_bytes, largest);
    }
  }
  for (int iter = 0; iter < 64; ++iter) {
    const Capacity cap = compute_capacity(problem.cluster, problem.model);
    uint64_t usable = 0;
    for (uint64_t b : cap.node_bytes) usable += b;
    if (usable >= problem.model.total_expert_bytes()) break;
    for (Node& node : problem.cluster.nodes) {
      for (Device& device : node.devices) {
        device.expert_budget_bytes = device.expert_budget_bytes * 9 / 8 + 1;
      }
    }
  }
  RoutingProfileSpec routing = spec.routing;
  const RoutingProfile profile = make_routing_profile(problem.model, routing);
  const int32_t n_tasks = static_cast<int32_t>(profile.probability.size());
  problem.activations.counts.assign(spec.n_nodes,
                                    std::vector<double>(problem.model.n_experts_total(), 0.0));
  problem.activations.experts_per_token = spec.top_k;
  for (int32_t n = 0; n < spec.n_nodes; ++n) {
    const auto& task = profile.probability[n % n_tasks];
    for (int32_t l = 0; l < problem.model.n_layers(); ++l) {
      for (int32_t e = 0; e < problem.model.n_experts(l); ++e) {
        const double mean = spec.tokens_per_node * spec.top_k * task[l][e];
        double count = mean;
        if (spec.sample_counts) {
          std::poisson_distribution<int64_t> poisson(std::max(mean, 1e-12));
          count = static_cast<double>(poisson(rng));
        }
        problem.activations.counts[n][problem.model.expert_index(l, e)] = count;
      }
    }
  }
  return problem;
}

}  // namespace dancemoe::placement
