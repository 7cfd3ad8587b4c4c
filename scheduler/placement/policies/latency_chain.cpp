// Step 1 of `latency` (latency.h): one node's nested sets for one layer.
#include <algorithm>
#include <cmath>

#include "scheduler/placement/policies/latency.h"

namespace dancemoe::placement {

LayerChain build_chain(const LayerSteps& s, const ChainPrices& prices) {
  const int32_t n = static_cast<int32_t>(s.log_q.size());
  const std::span<const double> load_s = prices.load_s;
  const double per_f = prices.step_value_s * s.steps;  // seconds for F going from 0 to 1
  // Seconds saved by holding e for its own activations.
  auto own = [&](int32_t e) { return prices.activation_value_s * s.use[e] * s.steps; };

  // The order follows the co-activation estimate (step_model.h), kept
  // incrementally: cur[e] = sum of log r between e and the experts dropped
  // so far, so dropping e too multiplies it by q_e exp(cur[e]).
  std::vector<uint8_t> kept(n, 1);
  std::vector<double> cur(n, 0.0);
  double log_f = 0.0, outside_use = 0.0, upper = 1.0, f_kept = 1.0;
  auto order_f = [&](int32_t e) {
    if (s.steps <= 0) return 1.0;
    return bounded(std::exp(log_f + s.log_q[e] + cur[e]),
                   std::max(0.0, 1.0 - outside_use - s.use[e]),
                   std::min(upper, std::exp(s.log_q[e])));
  };
  std::vector<int32_t> dropped;
  // The values follow the fully-local estimate of each kept set.
  std::vector<double> f_of_size(n + 1, 1.0);
  for (int32_t size = n; size > 0; --size) {
    int32_t best = -1;
    double best_loss = 0.0;
    for (int32_t e = 0; e < n; ++e) {
      if (!kept[e]) continue;
      const double loss = per_f * (f_kept - order_f(e)) + own(e) - load_s[e];
      // Least loss first; ties: the less used expert, then the higher id.
      if (best < 0 || loss < best_loss ||
          (loss == best_loss &&
           (s.use[e] < s.use[best] || (s.use[e] == s.use[best] && e > best)))) {
        best = e;
        best_loss = loss;
      }
    }
    f_kept = order_f(best);
    log_f += s.log_q[best] + cur[best];
    outside_use += s.use[best];
    upper = std::min(upper, std::exp(s.log_q[best]));
    for (const LayerSteps::Link& link : s.links[best]) cur[link.other] += link.log_r;
    kept[best] = 0;
    dropped.push_back(best);
    f_of_size[size - 1] = s.fully_local(kept);
  }
  LayerChain chain;
  chain.order.assign(dropped.rbegin(), dropped.rend());
  chain.value.assign(n + 1, 0.0);
  // The true F never falls when a set grows; the estimate's pieces may
  // (the bounds are per set): keep the values monotone.
  double extra = 0.0;  // own activations minus loads of the prefix
  for (int32_t size = 0; size <= n; ++size) {
    if (size > 0) {
      f_of_size[size] = std::max(f_of_size[size], f_of_size[size - 1]);
      extra += own(chain.order[size - 1]) - load_s[chain.order[size - 1]];
    }
    chain.value[size] = per_f * f_of_size[size] + extra;
  }
  return chain;
}

}  // namespace dancemoe::placement
