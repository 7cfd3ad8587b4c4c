#include "edge_node/moe/weight_gathering.h"

#include <algorithm>

namespace dancemoe::node {
namespace {

// The experts still sent to one peer, with per-token counts of how many of
// them each token is routed to (a token leaves the call with its last one).
struct PeerSet {
  std::vector<size_t> members;       // candidate indices still sent
  std::vector<int32_t> token_count;  // [n_tokens]
  int64_t distinct = 0;
  uint64_t pairs = 0;
};

double call_us(const GatherPeer& p, const GatherInputs& in, int64_t distinct, uint64_t pairs) {
  if (distinct == 0) return 0.0;
  return p.overhead_us +
         static_cast<double>(distinct) * static_cast<double>(in.bytes_per_token) * p.us_per_byte +
         static_cast<double>(pairs) * p.remote_us_per_pair;
}

double gather_us(const GatherPeer& p, const GatherInputs& in, const GatherCandidate& c) {
  const double compute = static_cast<double>(c.tokens.size()) * in.local_us_per_pair;
  if (c.cached) return compute;
  return p.overhead_us + static_cast<double>(c.weight_bytes) * p.us_per_byte + compute;
}

// Tokens of `c` that no other expert of the set needs.
int64_t unique_tokens(const PeerSet& set, const GatherCandidate& c) {
  int64_t n = 0;
  for (int32_t t : c.tokens) n += set.token_count[static_cast<size_t>(t)] == 1 ? 1 : 0;
  return n;
}

}  // namespace

GatherChoice plan_gathering(const GatherInputs& in) {
  GatherChoice out;
  out.gather.assign(in.candidates.size(), false);
  std::vector<PeerSet> sets(in.peers.size());
  for (PeerSet& s : sets) s.token_count.assign(static_cast<size_t>(in.n_tokens), 0);
  for (size_t i = 0; i < in.candidates.size(); ++i) {
    const GatherCandidate& c = in.candidates[i];
    PeerSet& s = sets[static_cast<size_t>(c.peer)];
    s.members.push_back(i);
    s.pairs += c.tokens.size();
    for (int32_t t : c.tokens) {
      if (s.token_count[static_cast<size_t>(t)]++ == 0) ++s.distinct;
    }
  }
  auto take = [&](PeerSet& s, size_t i) {
    const GatherCandidate& c = in.candidates[i];
    out.gather[i] = true;
    if (!c.cached) out.weight_bytes += c.weight_bytes;
    for (int32_t t : c.tokens) {
      if (--s.token_count[static_cast<size_t>(t)] == 0) {
        --s.distinct;
        out.activation_bytes_avoided += in.bytes_per_token;
      }
    }
    s.pairs -= c.tokens.size();
    s.members.erase(std::find(s.members.begin(), s.members.end(), i));
  };
  for (size_t p = 0; p < sets.size(); ++p) {
    PeerSet& s = sets[p];
    const GatherPeer& peer = in.peers[p];
    // Cached experts are here already: never sent.
    for (size_t k = s.members.size(); k-- > 0;) {
      if (in.candidates[s.members[k]].cached) take(s, s.members[k]);
    }
    if (!peer.measured) continue;
    while (!s.members.empty()) {
      const double now = call_us(peer, in, s.distinct, s.pairs);
      double best_gain = 0.0;
      size_t best = SIZE_MAX;
      for (size_t i : s.members) {
        const GatherCandidate& c = in.candidates[i];
        if (out.weight_bytes + c.weight_bytes > in.cache_room_bytes) continue;
        const double without =
            call_us(peer, in, s.distinct - unique_tokens(s, c), s.pairs - c.tokens.size());
        const double gain = now - without - gather_us(peer, in, c);
        if (gain > best_gain) {
          best_gain = gain;
          best = i;
        }
      }
      if (best == SIZE_MAX) break;
      out.estimated_saving_us += best_gain;
      take(s, best);
    }
    // Experts sharing tokens save little one by one; all of them together
    // save the whole call.
    if (s.members.empty()) continue;
    double all = call_us(peer, in, s.distinct, s.pairs);
    uint64_t bytes = 0;
    for (size_t i : s.members) {
      all -= gather_us(peer, in, in.candidates[i]);
      bytes += in.candidates[i].weight_bytes;
    }
    if (all > 0 && out.weight_bytes + bytes <= in.cache_room_bytes) {
      out.estimated_saving_us += all;
      while (!s.members.empty()) take(s, s.members.back());
    }
  }
  return out;
}

}  // namespace dancemoe::node
