// Replica choice for one MoE layer (DESIGN.md §3): every remote expert the
// layer needs goes to one peer holding it, so that the layer's expected
// completion time -- the slowest destination, since calls run in parallel
// -- is smallest, preferring fewer destinations (the number of transfers,
// not bytes, dominates small-batch latency).
//
// Greedy: experts with one usable holder are placed first; the others, most
// tokens first, go to the holder that minimises the resulting maximum over
// destinations; ties go to a destination already in use, then to the
// smaller estimate, then to the lower peer index (deterministic). A
// destination not yet in use is charged two more per-call overheads. Peers in
// back-off are used only for experts no other holder has.
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dancemoe::node {

struct ExpertDemand {
  int32_t expert = 0;
  std::span<const int32_t> tokens;   // the layer's tokens routed to it
  std::span<const int32_t> holders;  // peer indices holding it
};

struct PeerCost {
  bool usable = true;  // false: in back-off or excluded (already failed this layer)
  double overhead_us = 150.0;
  double us_per_byte = 0.001;
  double us_per_pair = 50.0;
  int in_flight = 0;
};

// Returns, per demand, the chosen peer index, or -1 when it has no holder at all.
// `bytes_per_token`: request plus reply bytes one token adds to a call.
std::vector<int32_t> choose_replicas(std::span<const ExpertDemand> demands,
                                     std::span<const PeerCost> peers, int64_t n_tokens,
                                     uint64_t bytes_per_token);

}  // namespace dancemoe::node
