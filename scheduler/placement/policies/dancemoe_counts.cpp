// Algorithm 1 of the paper: per-node, per-layer expert counts from the
// entropy of each layer's activation distribution, then the coverage
// rebalance. Every resolved ambiguity is listed in dancemoe.h.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "scheduler/placement/policies/dancemoe.h"

namespace dancemoe::placement {
namespace {

// Memory is counted in "units": slots when expert sizes are equal (one unit
// per expert), bytes otherwise (an expert of layer l costs its size).
struct Units {
  std::vector<uint64_t> per_expert;  // [layer]
  std::vector<uint64_t> budget;      // [node]
};

Units memory_units(const Problem& problem, const Capacity& capacity) {
  Units units;
  for (const LayerShape& layer : problem.model.layers()) {
    units.per_expert.push_back(capacity.slot_based ? 1 : layer.expert_bytes);
  }
  for (size_t n = 0; n < problem.cluster.nodes.size(); ++n) {
    units.budget.push_back(capacity.slot_based ? static_cast<uint64_t>(capacity.node_slots[n])
                                               : capacity.node_bytes[n]);
  }
  return units;
}

// N[n][.] for one node before the cross-node rebalance.
std::vector<int64_t> node_counts(const ModelShape& model, const std::vector<double>& v,
                                 const Units& units, uint64_t budget) {
  const int32_t n_layers = model.n_layers();
  std::vector<double> share(n_layers);
  const double v_sum = std::accumulate(v.begin(), v.end(), 0.0);
  for (int32_t l = 0; l < n_layers; ++l) {
    share[l] = v_sum > 0 ? v[l] / v_sum
                         : static_cast<double>(model.n_experts(l)) / model.n_experts_total();
  }
  std::vector<double> ideal(n_layers);
  std::vector<int64_t> count(n_layers);
  uint64_t used = 0;
  for (int32_t l = 0; l < n_layers; ++l) {
    ideal[l] = static_cast<double>(budget) * share[l] / static_cast<double>(units.per_expert[l]);
    count[l] = std::min<int64_t>(static_cast<int64_t>(std::floor(ideal[l])), model.n_experts(l));
    used += static_cast<uint64_t>(count[l]) * units.per_expert[l];
  }
  // Remainders: one at a time to the layer furthest below its ideal share.
  while (true) {
    int32_t best = -1;
    for (int32_t l = 0; l < n_layers; ++l) {
      if (count[l] >= model.n_experts(l) || used + units.per_expert[l] > budget) continue;
      if (best < 0 || ideal[l] - count[l] > ideal[best] - count[best]) best = l;
    }
    if (best < 0) break;
    ++count[best];
    used += units.per_expert[best];
  }
  return count;
}

// The coverage rebalance across nodes (dancemoe.h). Leaves a layer short
// only when no donor can make room (unequal sizes).
void rebalance(const Problem& problem, const Capacity& capacity, const Units& units,
               std::vector<std::vector<int64_t>>& count) {
  const ModelShape& model = problem.model;
  const size_t n_nodes = count.size();
  const int32_t n_layers = model.n_layers();
  std::vector<int64_t> total(n_layers, 0);
  std::vector<uint64_t> free(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) {
    uint64_t used = 0;
    for (int32_t l = 0; l < n_layers; ++l) {
      total[l] += count[n][l];
      used += static_cast<uint64_t>(count[n][l]) * units.per_expert[l];
    }
    free[n] = units.budget[n] - used;
  }
  std::vector<size_t> by_memory(n_nodes);
  std::iota(by_memory.begin(), by_memory.end(), 0);
  std::stable_sort(by_memory.begin(), by_memory.end(), [&](size_t a, size_t b) {
    return capacity.node_bytes[a] > capacity.node_bytes[b];
  });
  for (int32_t l = 0; l < n_layers; ++l) {
    while (total[l] < model.n_experts(l)) {
      // Donor layers by surplus, largest first (ties: lower layer).
      std::vector<int32_t> donors;
      for (int32_t d = 0; d < n_layers; ++d) {
        if (d != l && total[d] > model.n_experts(d)) donors.push_back(d);
      }
      std::stable_sort(donors.begin(), donors.end(), [&](int32_t a, int32_t b) {
        return total[a] - model.n_experts(a) > total[b] - model.n_experts(b);
      });
      bool moved = false;
      for (int32_t d : donors) {
        for (size_t n : by_memory) {
          if (count[n][d] == 0 || count[n][l] >= model.n_experts(l)) continue;
          // How many donor experts must go to make room (1 with equal sizes).
          const int64_t surplus = total[d] - model.n_experts(d);
          uint64_t room = free[n];
          int64_t take = 0;
          while (room < units.per_expert[l] && take < count[n][d] && take < surplus) {
            room += units.per_expert[d];
            ++take;
          }
          if (room < units.per_expert[l]) continue;
          count[n][d] -= take;
          total[d] -= take;
          free[n] = room - units.per_expert[l];
          ++count[n][l];
          ++total[l];
          moved = true;
          break;
        }
        if (moved) break;
      }
      if (!moved) break;  // unequal sizes only: Algorithm 2's repair covers it
    }
  }
}

}  // namespace

double entropy_bits(const double* counts, int32_t size) {
  double sum = 0.0;
  for (int32_t i = 0; i < size; ++i) sum += counts[i];
  if (sum <= 0) return std::log2(static_cast<double>(size));
  double h = 0.0;
  for (int32_t i = 0; i < size; ++i) {
    if (counts[i] > 0) {
      const double p = counts[i] / sum;
      h -= p * std::log2(p);
    }
  }
  return h;
}

DancemoeCounts dancemoe_layer_counts(const Problem& problem, const Capacity& capacity) {
  const ModelShape& model = problem.model;
  const Units units = memory_units(problem, capacity);
  DancemoeCounts out;
  for (size_t n = 0; n < problem.cluster.nodes.size(); ++n) {
    std::vector<double> v(model.n_layers());
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      v[l] =
          entropy_bits(problem.activations.counts[n].data() + model.offset(l), model.n_experts(l));
    }
    out.counts.push_back(node_counts(model, v, units, units.budget[n]));
    out.entropy_bits.push_back(std::move(v));
  }
  rebalance(problem, capacity, units, out.counts);
  return out;
}

}  // namespace dancemoe::placement
