// Weight gathering (docs/partial-checkpoints.md, "Weight gathering"): for a
// long prompt, sending a peer the hidden states of every token routed to its
// experts (and receiving their sums back) can move more bytes than fetching
// those experts' weights once and computing them here -- and fetched
// weights stay in the offload cache for later layers' calls of the same
// expert and later prompts. Per layer and per remote expert, this chooses.
//
// The model, per destination peer p of this layer (the replica the executor
// chose) with measured link costs (PeerEstimate: overhead per call,
// microseconds per byte, per (token, expert) pair):
//   call(S)   = overhead_p + distinct_tokens(S) * bytes_per_token * us_per_byte_p
//               + pairs(S) * remote_us_per_pair          (C(empty) = 0)
//   gather(e) = [not cached] (overhead_p + weight_bytes(e) * us_per_byte_p)
//               + pairs(e) * local_us_per_pair
// where S is the set of p's experts still sent. Greedily, the expert whose
// removal from S gains most, call(S) - call(S \ e) - gather(e) > 0, is
// gathered, until no removal gains (an expert's tokens shared with other
// experts of S save nothing until those go too). Experts already in the
// offload cache are always computed here. New weights per layer are
// bounded by the cache's free capacity (larger experts never gathered). A
// peer whose link is not measured yet is never gathered from: its calls
// measure it.
//
// A pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace dancemoe::node {

struct GatherPeer {
  bool measured = false;  // the estimate has samples (else: send)
  double overhead_us = 0.0;
  double us_per_byte = 0.0;
  double remote_us_per_pair = 0.0;
};

struct GatherCandidate {
  int32_t expert = 0;
  int32_t peer = 0;             // index into the peers given to plan_gathering
  std::vector<int32_t> tokens;  // the layer tokens routed to it, ascending, distinct
  uint64_t weight_bytes = 0;    // to fetch
  bool cached = false;          // in the offload cache already
};

struct GatherInputs {
  std::vector<GatherPeer> peers;
  std::vector<GatherCandidate> candidates;
  int64_t n_tokens = 0;          // of the layer
  uint64_t bytes_per_token = 0;  // hidden states both ways, wire dtype
  double local_us_per_pair = 0.0;
  uint64_t cache_room_bytes = 0;  // weights that may be fetched in this layer
};

struct GatherChoice {
  std::vector<bool> gather;               // [candidate]
  uint64_t weight_bytes = 0;              // fetched (not cached) for the gathered ones
  uint64_t activation_bytes_avoided = 0;  // tokens no longer sent (both ways)
  double estimated_saving_us = 0.0;
};

GatherChoice plan_gathering(const GatherInputs& in);

}  // namespace dancemoe::node
