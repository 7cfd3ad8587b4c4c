#include "edge_node/remote/replica_chooser.h"

#include <algorithm>
#include <tuple>

namespace dancemoe::node {
namespace {

struct Destination {
  bool used = false;
  std::vector<uint8_t> has_token;  // [n_tokens]
  uint64_t n_tokens = 0;
  uint64_t n_pairs = 0;
};

double estimate(const PeerCost& c, uint64_t tokens, uint64_t pairs, uint64_t bytes_per_token) {
  return c.overhead_us * (1 + c.in_flight) +
         c.us_per_byte * static_cast<double>(tokens * bytes_per_token) +
         c.us_per_pair * static_cast<double>(pairs);
}

}  // namespace

std::vector<int32_t> choose_replicas(std::span<const ExpertDemand> demands,
                                     std::span<const PeerCost> peers, int64_t n_tokens,
                                     uint64_t bytes_per_token) {
  std::vector<int32_t> choice(demands.size(), -1);
  std::vector<Destination> dest(peers.size());
  auto add_tokens = [&](Destination& d, const ExpertDemand& demand) {
    if (d.has_token.empty()) d.has_token.assign(static_cast<size_t>(n_tokens), 0);
    for (int32_t t : demand.tokens) {
      if (!d.has_token[static_cast<size_t>(t)]) {
        d.has_token[static_cast<size_t>(t)] = 1;
        ++d.n_tokens;
      }
    }
    d.n_pairs += demand.tokens.size();
    d.used = true;
  };
  auto new_tokens = [&](const Destination& d, const ExpertDemand& demand) {
    if (d.has_token.empty()) return static_cast<uint64_t>(demand.tokens.size());
    uint64_t n = 0;
    for (int32_t t : demand.tokens) n += d.has_token[static_cast<size_t>(t)] ? 0 : 1;
    return n;
  };
  auto usable_holders = [&](const ExpertDemand& demand) {
    std::vector<int32_t> out;
    for (int32_t h : demand.holders) {
      if (peers[static_cast<size_t>(h)].usable) out.push_back(h);
    }
    // No usable holder: fall back to every holder (a peer in back-off may be back).
    if (out.empty()) out.assign(demand.holders.begin(), demand.holders.end());
    return out;
  };

  std::vector<size_t> flexible;
  for (size_t i = 0; i < demands.size(); ++i) {
    const std::vector<int32_t> holders = usable_holders(demands[i]);
    if (holders.empty()) continue;
    if (holders.size() == 1) {
      choice[i] = holders[0];
      add_tokens(dest[static_cast<size_t>(holders[0])], demands[i]);
    } else {
      flexible.push_back(i);
    }
  }
  std::stable_sort(flexible.begin(), flexible.end(), [&](size_t a, size_t b) {
    if (demands[a].tokens.size() != demands[b].tokens.size()) {
      return demands[a].tokens.size() > demands[b].tokens.size();
    }
    return demands[a].expert < demands[b].expert;
  });
  for (size_t i : flexible) {
    const ExpertDemand& demand = demands[i];
    int32_t best = -1;
    // Lexicographic: layer estimate, then a destination already in use, then
    // the destination's own estimate, then the lower peer index.
    std::tuple<double, bool, double, int32_t> best_key{};
    for (int32_t h : usable_holders(demand)) {
      const Destination& d = dest[static_cast<size_t>(h)];
      const PeerCost& cost = peers[static_cast<size_t>(h)];
      // A destination not yet in use costs one more message to send and
      // receive here, and one more reply that may straggle: charge it two
      // more fixed overheads, so it is chosen only when it clearly shortens
      // the layer (compute-heavy calls), not for a marginal gain.
      const double own = estimate(cost, d.n_tokens + new_tokens(d, demand),
                                  d.n_pairs + demand.tokens.size(), bytes_per_token) +
                         (d.used ? 0.0 : 2.0 * cost.overhead_us);
      double layer = own;
      for (size_t p = 0; p < dest.size(); ++p) {
        if (!dest[p].used || static_cast<int32_t>(p) == h) continue;
        layer =
            std::max(layer, estimate(peers[p], dest[p].n_tokens, dest[p].n_pairs, bytes_per_token));
      }
      const std::tuple<double, bool, double, int32_t> key{layer, !d.used, own, h};
      if (best < 0 || key < best_key) {
        best = h;
        best_key = key;
      }
    }
    choice[i] = best;
    add_tokens(dest[static_cast<size_t>(best)], demand);
  }
  return choice;
}

}  // namespace dancemoe::node
