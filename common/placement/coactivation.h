// CoActivationCounter: how often each pair of experts of a MoE layer was
// routed for the same token (issue 17). A node counts the tokens it serves
// (edge_node/activation/activation_log.h) and reports each window's
// strongest pairs to the scheduler; the simulator counts the same way, so the
// placement policies see in simulation what they see in a cluster.
//
// Counting is exact: a dense triangular table per layer (n(n-1)/2 counters:
// 8 KB per layer of 64 experts, 130 KB of 256), k(k-1)/2 increments per
// token and layer.
//
// Reporting is compact: per layer at most `per_layer` pairs, those most
// above independence -- the largest excess c_ab - f_a f_b / T (T tokens at
// the layer, f the experts' counts), positive only (ties: larger count, then
// lower ids). Why the excess and not the count: the pairs that change which
// set of experts keeps a step local are those routed together more than
// their popularity says; the most frequent pairs are mostly pairs of popular
// experts, which every placement holds anyway (docs/placement-latency.md
// measures both on the OLMoE trace). Error bound of a report: listed counts
// are exact for the window; a pair that is not listed has an excess no
// larger than the smallest listed one of its layer (or none above 0 when the
// list is shorter than `per_layer`). The scheduler sums the windows' lists,
// so a stored pair count is at most the true one, short by the windows that
// did not list it; readers treat unlisted pairs as independent.
//
// Not thread-safe (the activation log holds it under its mutex).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dancemoe {

class CoActivationCounter {
 public:
  struct Pair {
    int32_t layer = 0;
    int32_t a = 0;  // a < b
    int32_t b = 0;
    uint64_t count = 0;
    friend bool operator==(const Pair&, const Pair&) = default;
  };

  // experts_per_layer[l]: experts of layer l; 0 for a dense layer (not counted).
  explicit CoActivationCounter(std::vector<int32_t> experts_per_layer);

  // One token's routed experts at `layer`: distinct ids in [0, experts);
  // ids out of range and repeats are ignored (never trusted blindly).
  void add_token(int32_t layer, std::span<const int32_t> experts);
  void clear();

  uint64_t count(int32_t layer, int32_t a, int32_t b) const;
  uint64_t tokens(int32_t layer) const { return tokens_[layer]; }
  uint64_t uses(int32_t layer, int32_t expert) const { return uses_[layer][expert]; }

  // Per layer, the `per_layer` pairs of largest positive excess (see above),
  // ordered by layer then by decreasing excess.
  std::vector<Pair> top_pairs(int32_t per_layer) const;

 private:
  size_t index(int32_t n, int32_t a, int32_t b) const {  // a < b
    return static_cast<size_t>(a) * static_cast<size_t>(2 * n - a - 1) / 2 +
           static_cast<size_t>(b - a - 1);
  }

  std::vector<int32_t> experts_;
  std::vector<std::vector<uint32_t>> pairs_;  // [layer][triangular index]
  std::vector<std::vector<uint64_t>> uses_;   // [layer][expert]
  std::vector<uint64_t> tokens_;              // [layer]
  std::vector<uint8_t> seen_;                 // scratch: repeats within a token
  std::vector<int32_t> ids_;                  // scratch: one token's ids
};

}  // namespace dancemoe
