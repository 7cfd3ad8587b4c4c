#include "common/placement/coactivation.h"

#include <algorithm>

namespace dancemoe {

CoActivationCounter::CoActivationCounter(std::vector<int32_t> experts_per_layer)
    : experts_(std::move(experts_per_layer)) {
  int32_t widest = 0;
  for (int32_t& n : experts_) {
    n = std::max(n, 0);
    widest = std::max(widest, n);
    pairs_.emplace_back(static_cast<size_t>(n) * static_cast<size_t>(std::max(n - 1, 0)) / 2, 0);
    uses_.emplace_back(static_cast<size_t>(n), 0);
  }
  tokens_.assign(experts_.size(), 0);
  seen_.assign(static_cast<size_t>(widest), 0);
}

void CoActivationCounter::add_token(int32_t layer, std::span<const int32_t> experts) {
  if (layer < 0 || static_cast<size_t>(layer) >= experts_.size() || experts_[layer] == 0) return;
  const int32_t n = experts_[layer];
  // Valid, distinct ids of this token, in ascending order.
  std::vector<int32_t>& ids = ids_;
  ids.clear();
  for (int32_t e : experts) {
    if (e < 0 || e >= n || seen_[e]) continue;
    seen_[e] = 1;
    ids.push_back(e);
  }
  for (int32_t e : ids) seen_[e] = 0;
  std::sort(ids.begin(), ids.end());
  const auto k = static_cast<int32_t>(ids.size());
  ++tokens_[layer];
  std::vector<uint32_t>& table = pairs_[layer];
  for (int32_t i = 0; i < k; ++i) {
    ++uses_[layer][ids[i]];
    for (int32_t j = i + 1; j < k; ++j) ++table[index(n, ids[i], ids[j])];
  }
}

void CoActivationCounter::clear() {
  for (auto& table : pairs_) std::fill(table.begin(), table.end(), 0);
  for (auto& row : uses_) std::fill(row.begin(), row.end(), 0);
  std::fill(tokens_.begin(), tokens_.end(), 0);
}

uint64_t CoActivationCounter::count(int32_t layer, int32_t a, int32_t b) const {
  if (a > b) std::swap(a, b);
  const int32_t n = experts_[layer];
  if (a < 0 || b >= n || a == b) return 0;
  return pairs_[layer][index(n, a, b)];
}

std::vector<CoActivationCounter::Pair> CoActivationCounter::top_pairs(int32_t per_layer) const {
  std::vector<Pair> out;
  struct Scored {
    double excess;
    Pair pair;
  };
  std::vector<Scored> scored;
  for (int32_t l = 0; l < static_cast<int32_t>(experts_.size()); ++l) {
    const int32_t n = experts_[l];
    if (n == 0 || tokens_[l] == 0 || per_layer <= 0) continue;
    const double t = static_cast<double>(tokens_[l]);
    scored.clear();
    for (int32_t a = 0; a < n; ++a) {
      const double fa = static_cast<double>(uses_[l][a]);
      for (int32_t b = a + 1; b < n; ++b) {
        const uint32_t c = pairs_[l][index(n, a, b)];
        if (c == 0) continue;
        const double excess = c - fa * static_cast<double>(uses_[l][b]) / t;
        if (excess > 0) scored.push_back({excess, Pair{l, a, b, c}});
      }
    }
    const size_t keep = std::min(scored.size(), static_cast<size_t>(per_layer));
    std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(keep),
                      scored.end(), [](const Scored& x, const Scored& y) {
                        if (x.excess != y.excess) return x.excess > y.excess;
                        if (x.pair.count != y.pair.count) return x.pair.count > y.pair.count;
                        return x.pair.a != y.pair.a ? x.pair.a < y.pair.a : x.pair.b < y.pair.b;
                      });
    for (size_t i = 0; i < keep; ++i) out.push_back(scored[i].pair);
  }
  return out;
}

}  // namespace dancemoe
