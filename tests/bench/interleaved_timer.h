// Interleaved timing for benchmarks on a shared, noisy machine: the
// variants of one comparison are timed in batches of about 1 ms (shorter
// than a scheduler time slice), round after round, and each keeps its
// fastest batch, so a burst of load from another process costs every
// variant a batch or two instead of skewing one of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dancemoe::bench {

// One timed thing; call(i) processes pool copy i.
struct Variant {
  std::string label;
  std::function<void(int64_t)> call;
  double best_seconds = 0.0;  // per call, fastest batch
};

// Rounds continue while any variant has fewer than 3 batches or less than
// min_seconds of timed calls; a variant that has both sits the rest out, so
// slow ones (scalar) do not hold the fast ones to a handful of samples.
inline void time_interleaved(std::vector<Variant>* variants, double min_seconds) {
  int64_t index = 0;
  for (Variant& v : *variants) v.call(index++);  // warm-up
  std::vector<double> timed(variants->size(), 0.0);
  std::vector<int> batches(variants->size(), 0);
  for (bool more = true; more;) {
    more = false;
    for (size_t i = 0; i < variants->size(); ++i) {
      if (batches[i] >= 3 && timed[i] >= min_seconds) continue;
      more = true;
      Variant& v = (*variants)[i];
      const auto start = std::chrono::steady_clock::now();
      int64_t n_calls = 0;
      double elapsed = 0.0;
      while (elapsed < 0.001) {
        v.call(index++);
        ++n_calls;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      timed[i] += elapsed;
      ++batches[i];
      const double per_call = elapsed / static_cast<double>(n_calls);
      if (v.best_seconds == 0.0 || per_call < v.best_seconds) v.best_seconds = per_call;
    }
  }
}

}  // namespace dancemoe::bench
