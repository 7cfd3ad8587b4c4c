// `latency` (latency.h): steps 2-4, blocks, fill and the safeguard.
#include "scheduler/placement/policies/latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <queue>

#include "scheduler/placement/costs.h"
#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"
#include "scheduler/placement/policies/weighted_choice.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::placement {
namespace {

// Gains per byte within this factor of each other count as equal (step 2).
constexpr double kRatioTolerance = 1.001;
// Weight of a local activation in the fill, relative to a fully-local step,
// when the remote compute of an activation is unknown: it only orders
// experts whose step gains are equal.
constexpr double kActivationTieWeight = 1e-3;

struct Inputs {
  const Problem& problem;
  const StepModel& steps;
  double activation_value_s = 0.0;              // seconds per activation made local
  std::vector<double> step_value_s;             // [node] w_n
  std::vector<std::vector<double>> load_s;      // [node][expert]
  std::vector<std::vector<LayerChain>> chains;  // [node][layer]
};

Inputs prepare(const Problem& problem, const StepModel& steps, const Capacity& capacity) {
  const ModelShape& model = problem.model;
  const double scale = problem.horizon_s / problem.activations.window_s;
  Inputs in{problem, steps, scale * steps.remote_compute_s(), {}, {}, {}};
  const size_t n_nodes = problem.cluster.nodes.size();
  std::vector<std::vector<uint8_t>> held;
  if (problem.current) held = node_holdings(*problem.current, model.n_experts_total());
  in.load_s.assign(n_nodes, std::vector<double>(model.n_experts_total(), 0.0));
  in.chains.resize(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) {
    in.step_value_s.push_back(scale * steps.step_penalty_s(problem.cluster.nodes[n]));
    if (problem.current) {
      const double speed = node_load_bytes_per_s(problem, capacity, n);
      for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
        if (!held[n][x]) in.load_s[n][x] = static_cast<double>(model.expert_bytes(x)) / speed;
      }
    }
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      const auto load =
          std::span<const double>(in.load_s[n]).subspan(model.offset(l), model.n_experts(l));
      in.chains[n].push_back(
          build_chain(steps.at(n, l), {in.step_value_s[n], in.activation_value_s, load}));
    }
  }
  return in;
}

// Step 2: prefix sizes per (node, layer).
class Blocks {
 public:
  Blocks(const Inputs& in, const Capacity& capacity)
      : in_(in), model_(in.problem.model), copies_(model_.n_experts_total(), 0) {
    const size_t n_nodes = in.problem.cluster.nodes.size();
    size_.assign(n_nodes, std::vector<int32_t>(model_.n_layers(), 0));
    version_.assign(n_nodes, std::vector<int64_t>(model_.n_layers(), 0));
    for (size_t n = 0; n < n_nodes; ++n) {
      free_.push_back(static_cast<double>(capacity.node_bytes[n]));
      free_total_ += free_.back();
    }
    uncovered_ = static_cast<double>(model_.total_expert_bytes());
  }

  // With `whole_layers_first`, a first pass takes only whole layers that no
  // block touches yet (each layer gets one home, then one holder serves
  // every other node's remote steps there), then the general pass runs.
  void grow(bool whole_layers_first) {
    if (whole_layers_first) {
      whole_only_ = true;
      run();
      whole_only_ = false;
    }
    run();
  }

  void run() {
    for (size_t n = 0; n < size_.size(); ++n) {
      for (int32_t l = 0; l < model_.n_layers(); ++l) offer(n, l);
    }
    while (!queue_.empty()) {
      const Candidate c = queue_.top();
      queue_.pop();
      if (c.version != version_[c.n][c.l]) continue;  // superseded
      if (!feasible(c.n, c.l, c.target)) {
        ++version_[c.n][c.l];
        offer(c.n, c.l);  // the best size that still keeps coverage feasible
        continue;
      }
      if (whole_only_) {  // the layer now has its home: nobody else's offer stands
        for (size_t m = 0; m < size_.size(); ++m) ++version_[m][c.l];
      }
      take(c.n, c.l, c.target);
      offer(c.n, c.l);
    }
  }

  const std::vector<std::vector<int32_t>>& sizes() const { return size_; }
  int64_t n_blocks() const { return n_blocks_; }
  int64_t n_whole_layers() const {
    int64_t whole = 0;
    for (const auto& node : size_) {
      for (int32_t l = 0; l < model_.n_layers(); ++l) whole += node[l] == model_.n_experts(l);
    }
    return whole;
  }

 private:
  struct Candidate {
    int64_t ratio_key = 0;  // log of the gain per byte, in steps of kRatioTolerance
    double newly = 0.0;     // bytes of experts no block covers yet
    size_t n = 0;
    int32_t l = 0;
    int32_t target = 0;
    int64_t version = 0;
    bool operator<(const Candidate& o) const {  // priority_queue: the largest on top
      if (ratio_key != o.ratio_key) return ratio_key < o.ratio_key;
      if (newly != o.newly) return newly < o.newly;
      if (n != o.n) return n > o.n;
      return l > o.l;
    }
  };

  ExpertIndex expert(size_t n, int32_t l, int32_t i) const {
    return model_.offset(l) + in_.chains[n][l].order[i];
  }

  // Growing (n, l) to `target` keeps room on n and leaves enough memory
  // anywhere for one copy of every expert still uncovered.
  bool layer_touched(int32_t l) const {
    for (int32_t e = 0; e < model_.n_experts(l); ++e) {
      if (copies_[model_.offset(l) + e] > 0) return true;
    }
    return false;
  }

  bool feasible(size_t n, int32_t l, int32_t target) const {
    if (whole_only_ && layer_touched(l)) return false;
    double cost = 0.0, newly = 0.0;
    for (int32_t i = size_[n][l]; i < target; ++i) {
      const double bytes = static_cast<double>(model_.expert_bytes(expert(n, l, i)));
      cost += bytes;
      if (copies_[expert(n, l, i)] == 0) newly += bytes;
    }
    return cost <= free_[n] && free_total_ - cost >= uncovered_ - newly;
  }

  void offer(size_t n, int32_t l) {
    const LayerChain& chain = in_.chains[n][l];
    const int32_t from = size_[n][l];
    if (whole_only_ && (from > 0 || layer_touched(l))) return;
    double cost = 0.0, newly = 0.0;
    bool found = false;
    Candidate best;
    double best_cost = 0.0;
    for (int32_t to = from + 1; to <= model_.n_experts(l); ++to) {
      const ExpertIndex x = expert(n, l, to - 1);
      const double bytes = static_cast<double>(model_.expert_bytes(x));
      cost += bytes;
      if (copies_[x] == 0) newly += bytes;
      if (cost > free_[n]) break;
      if (free_total_ - cost < uncovered_ - newly) continue;
      if (whole_only_ && to < model_.n_experts(l)) continue;
      const double gain = chain.value[to] - chain.value[from];
      if (!(gain > 0)) continue;
      const auto key =
          static_cast<int64_t>(std::floor(std::log(gain / cost) / std::log(kRatioTolerance)));
      const bool better = !found || key > best.ratio_key ||
                          (key == best.ratio_key &&
                           (newly > best.newly || (newly == best.newly && cost < best_cost)));
      if (better) {
        found = true;
        best = Candidate{key, newly, n, l, to, version_[n][l]};
        best_cost = cost;
      }
    }
    if (found) queue_.push(best);
  }

  void take(size_t n, int32_t l, int32_t target) {
    for (int32_t i = size_[n][l]; i < target; ++i) {
      const ExpertIndex x = expert(n, l, i);
      const double bytes = static_cast<double>(model_.expert_bytes(x));
      free_[n] -= bytes;
      free_total_ -= bytes;
      if (copies_[x]++ == 0) uncovered_ -= bytes;
    }
    size_[n][l] = target;
    ++version_[n][l];
    ++n_blocks_;
  }

  const Inputs& in_;
  const ModelShape& model_;
  std::vector<std::vector<int32_t>> size_;
  std::vector<std::vector<int64_t>> version_;
  std::vector<double> free_;
  double free_total_ = 0.0;
  double uncovered_ = 0.0;  // bytes of the experts no block holds
  std::vector<int32_t> copies_;
  std::priority_queue<Candidate> queue_;
  int64_t n_blocks_ = 0;
  bool whole_only_ = false;
};

// Step 3: weights for the exact fill. Blocks weigh more than all other
// weights together, so the solver keeps every one of them.
std::vector<std::vector<double>> fill_weights(const Inputs& in, const Blocks& blocks) {
  const Problem& problem = in.problem;
  const ModelShape& model = problem.model;
  const size_t n_nodes = problem.cluster.nodes.size();
  std::vector<std::vector<double>> w(n_nodes, std::vector<double>(model.n_experts_total(), 0.0));
  std::vector<std::vector<uint8_t>> in_block(n_nodes,
                                             std::vector<uint8_t>(model.n_experts_total(), 0));
  double total = 0.0;
  std::vector<uint8_t> held;
  for (size_t n = 0; n < n_nodes; ++n) {
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      const LayerChain& chain = in.chains[n][l];
      const LayerSteps& s = in.steps.at(n, l);
      const int32_t first = model.offset(l);
      held.assign(model.n_experts(l), 0);
      for (int32_t i = 0; i < blocks.sizes()[n][l]; ++i) {
        held[chain.order[i]] = 1;
        in_block[n][first + chain.order[i]] = 1;
      }
      const double base = s.fully_local(held);
      for (int32_t e = 0; e < model.n_experts(l); ++e) {
        if (held[e]) continue;
        held[e] = 1;
        const double gain = std::max(0.0, s.fully_local(held) - base);
        held[e] = 0;
        const double per_activation = in.activation_value_s > 0
                                          ? in.activation_value_s
                                          : kActivationTieWeight * in.step_value_s[n];
        const double v = in.step_value_s[n] * s.steps * gain +
                         per_activation * problem.activations.counts[n][first + e] -
                         in.load_s[n][first + e];
        w[n][first + e] = v;
        total += std::abs(v);
      }
    }
  }
  const double big = 2.0 * total + 1.0;
  for (size_t n = 0; n < n_nodes; ++n) {
    for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
      if (in_block[n][x]) w[n][x] = big;
    }
  }
  return w;
}

Result<Placement> fill(const Inputs& in, const Blocks& blocks) {
  const Problem& problem = in.problem;
  const std::vector<std::vector<double>> weight = fill_weights(in, blocks);
  const std::vector<double> popularity = global_counts(problem);
  std::vector<std::vector<uint8_t>> held;
  WeightedChoice choice;
  choice.weight = &weight;
  choice.tie_key = &popularity;
  if (problem.current) {
    held = node_holdings(*problem.current, problem.model.n_experts_total());
    choice.prefer = &held;
  }
  choice.label = "latency";
  return place_by_weight(problem, choice);
}

// Step 4: C_lat + T_mig of each candidate; the cheapest wins.
struct Scored {
  std::string name;
  Placement placement;
  double cost_s = 0.0;
  std::string note;  // how the blocks looked
};

Scored score(const Inputs& in, std::string name, Placement placement) {
  Scored s{std::move(name), std::move(placement), 0.0, {}};
  s.cost_s = evaluate_steps(in.problem, in.steps, s.placement).cost_s;
  if (in.problem.current) s.cost_s += migration_s(in.problem, *in.problem.current, s.placement);
  return s;
}

std::string fmt_s(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g s", seconds);
  return buffer;
}

}  // namespace

Result<Placement> place_latency(const Problem& problem) {
  DMOE_ASSIGN_OR_RETURN(const StepModel steps, StepModel::create(problem));
  const Capacity capacity = compute_capacity(problem.cluster, problem.model);
  const Inputs in = prepare(problem, steps, capacity);

  // Candidates in order of preference on equal cost.
  std::vector<Scored> candidates;
  if (problem.current && check_placement(problem, *problem.current).is_ok()) {
    candidates.push_back(score(in, "the current placement", *problem.current));
  }
  std::string blocks_note;
  Status fill_error = Status::ok();
  for (const bool whole_first : {false, true}) {
    Blocks blocks(in, capacity);
    blocks.grow(whole_first);
    Result<Placement> own = fill(in, blocks);
    if (!own.is_ok()) {
      fill_error = own.status();
      continue;
    }
    candidates.push_back(score(in, whole_first ? "whole layers first" : "blocks", std::move(*own)));
    candidates.back().note = std::to_string(blocks.n_blocks()) + " co-activation blocks (" +
                             std::to_string(blocks.n_whole_layers()) + " whole layers)";
  }
  for (const auto& [name, place] :
       {std::pair{"optimal", &place_optimal}, std::pair{"uniform", &place_uniform}}) {
    Result<Placement> other = place(problem);
    if (other.is_ok()) candidates.push_back(score(in, name, std::move(*other)));
  }
  if (candidates.empty()) return fill_error;
  const auto best =
      std::min_element(candidates.begin(), candidates.end(),
                       [](const Scored& a, const Scored& b) { return a.cost_s < b.cost_s; });
  std::string method = "latency: ";
  method += best->note.empty() ? "kept " + best->name + " (cheapest)"
                               : best->name + ": " + best->note + " + exact fill";
  method += "; C_lat + T_mig " + fmt_s(best->cost_s);
  if (!fill_error.is_ok()) method += " (a fill failed: " + fill_error.message() + ")";
  Placement out = std::move(best->placement);
  out.method = method;
  return out;
}

}  // namespace dancemoe::placement
