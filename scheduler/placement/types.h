// Value types of the placement library (DESIGN.md §5): the cluster (nodes ->
// devices), the model's expert shape, activation statistics f[n][l][e], the
// problem a policy solves, and the placement it returns.
//
// Experts are addressed by a flat index `x = offset(layer) + expert` so that the
// solvers work on dense arrays; ModelShape converts both ways. Nodes and
// devices are addressed by their index in Cluster (their string ids are for
// people and for the wire).
//
// Everything here is a plain value: copyable, no I/O, no globals. Reading a
// const object from several threads is safe; mutation needs the usual
// external synchronisation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dancemoe::placement {

// Dense position of an expert in a ModelShape (its identity is ExpertRef,
// common/model/expert_ref.h): solvers work on flat arrays indexed by it.
using ExpertIndex = int32_t;

struct Device {
  std::string id;
  // Memory this device may spend on routed experts (after dense weights,
  // KV cache and workspace), bytes.
  uint64_t expert_budget_bytes = 0;
  // Measured speed at which this device loads an expert (disk or network to
  // device memory), bytes/s. Used for the migration time T_mig.
  double load_bytes_per_s = 0.0;
  // Time one activation takes to compute on this device, relative to the
  // node's other devices (measured microseconds per pair, or a prior by
  // kind); lower is faster. Packing gives a node's hot experts to its fast
  // devices (packing.h). Only ratios within one node matter.
  double compute_cost = 1.0;
};

struct Node {
  std::string id;
  // Measured mean (remote - local) latency of one expert call on this node,
  // seconds: delta[n] of DESIGN.md §5.5.
  double remote_penalty_s = 0.0;
  std::vector<Device> devices;
  // Measured mean compute time of one activation (one token through one
  // expert) on this node's devices, seconds; 0 when unknown. The latency
  // model (step_model.h) charges it for every remote activation: a peer
  // computes it while the step waits.
  double expert_compute_s = 0.0;
};

struct Cluster {
  std::vector<Node> nodes;
};

struct LayerShape {
  int32_t n_experts = 0;
  uint64_t expert_bytes = 0;  // bytes of one routed expert of this layer
};

// The MoE layers of a model (dense layers are not placed and not listed).
// Precomputes the flat-id tables; cheap to copy for models of any real size.
class ModelShape {
 public:
  ModelShape() = default;
  explicit ModelShape(std::vector<LayerShape> layers);

  const std::vector<LayerShape>& layers() const { return layers_; }
  int32_t n_layers() const { return static_cast<int32_t>(layers_.size()); }
  int32_t n_experts(int32_t layer) const { return layers_[layer].n_experts; }
  int32_t n_experts_total() const { return offsets_.empty() ? 0 : offsets_.back(); }

  // First flat index of `layer`; offset(n_layers()) == n_experts_total().
  int32_t offset(int32_t layer) const { return offsets_[layer]; }
  ExpertIndex expert_index(int32_t layer, int32_t expert) const { return offsets_[layer] + expert; }
  int32_t layer_of(ExpertIndex x) const { return layer_of_[x]; }
  int32_t expert_in_layer(ExpertIndex x) const { return x - offsets_[layer_of_[x]]; }
  uint64_t expert_bytes(ExpertIndex x) const { return layers_[layer_of_[x]].expert_bytes; }

  // True when every layer's experts have the same size (the common case, in
  // which memory is counted in whole-expert slots and `optimal` is exact).
  bool uniform_expert_bytes() const;
  uint64_t total_expert_bytes() const;
  uint64_t min_expert_bytes() const;

 private:
  std::vector<LayerShape> layers_;
  std::vector<int32_t> offsets_;   // size n_layers + 1
  std::vector<int32_t> layer_of_;  // size n_experts_total
};

// How often two experts of one layer were routed for the same token (a
// co-activation), on one node over the window. a < b, both of one layer.
struct PairCount {
  ExpertIndex a = 0;
  ExpertIndex b = 0;
  double count = 0.0;
  friend bool operator==(const PairCount&, const PairCount&) = default;
};

// f[n][x]: activation counts of expert x observed on node n over a window of
// `window_s` seconds. Counts are doubles so that decayed windows fit; they
// must be finite and non-negative.
//
// The latency model (step_model.h) also needs the experts each token picks
// per layer (top-k: a layer's counts sum to k x its tokens) and, optionally,
// the co-activation counts of some pairs per node: the nodes report the
// pairs most above independence (docs/placement-latency.md); a pair that is
// not listed is taken as independent.
struct Activations {
  std::vector<std::vector<double>> counts;  // [n_nodes][n_experts_total]
  double window_s = 300.0;
  int32_t experts_per_token = 0;              // top-k; 0: unknown
  std::vector<std::vector<PairCount>> pairs;  // [n_nodes] (or empty: none known)
};

// Which device of which node holds which experts. experts[n][g] lists the
// flat indices held by device g of node n, sorted ascending, no repeats on a node.
struct Placement {
  std::vector<std::vector<std::vector<ExpertIndex>>> experts;  // [node][device] -> ids
  // How the placement was computed (policy and method, e.g. "exact min-cost
  // flow" or the heuristic used for unequal expert sizes).
  std::string method;
};

// Everything a policy needs. `current` is the placement in force (if any):
// migration-aware policies trade against it and packing keeps experts that
// stay on a node on their current device.
struct Problem {
  Cluster cluster;
  ModelShape model;
  Activations activations;
  double horizon_s = 300.0;  // H of DESIGN.md §5.5
  std::optional<Placement> current;
};

// holds[n][x] != 0 when some device of node n holds expert x.
std::vector<std::vector<uint8_t>> node_holdings(const Placement& placement,
                                                int32_t n_experts_total);

// An empty placement shaped like `cluster` (every device present, no experts).
Placement empty_placement(const Cluster& cluster);

// "layer 3 expert 17" for messages.
std::string describe_expert(const ModelShape& model, ExpertIndex x);

}  // namespace dancemoe::placement
