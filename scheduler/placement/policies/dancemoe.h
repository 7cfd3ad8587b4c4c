// `dancemoe`: the paper's placement (DESIGN.md §5.3), in two steps exposed
// separately so that tests can check each against hand-worked examples.
//
// Algorithm 1 (dancemoe_layer_counts): how many experts of each layer each
// node holds, N[n][l] = floor(M_n / m * v[n][l] / sum_l v[n][l]), v = Shannon
// entropy (bits) of the node's activation distribution over the layer's
// experts; then coverage rebalance. Algorithm 2 (dancemoe_assign): each node
// takes its top-N[n][l] experts of each layer by frequency; then every
// uncovered expert replaces the least-used duplicate on the server with the
// fewest duplicates.
//
// Ambiguities of the paper, resolved here (each has a test in
// tests/scheduler/placement/dancemoe_test.cpp):
//  - Capacity M_n / m: the node's whole-expert slots, summed over its devices
//    (validate.h). With unequal expert sizes the same formula runs in bytes:
//    N = floor(bytes_n * share / m_l).
//  - A layer the node never activated: entropy undefined; taken as
//    log2(E_l), the maximum (nothing known, assume broad routing), so an idle
//    node still spreads its memory over all layers.
//  - All of a node's layers at entropy 0 (sum_l v = 0): shares proportional
//    to the layers' expert counts E_l.
//  - N[n][l] never exceeds E_l (a node cannot hold an expert twice).
//  - Remainders: slots left by the floors (and by that cap) go one at a time
//    to the layer furthest below its ideal share q_l - N[n][l] (ties: lower
//    layer), so no memory is left unused unless the node holds everything.
//    The paper leaves them implicit; leaving them idle only wastes memory.
//  - Coverage rebalance: layers are visited in ascending order; while layer l
//    has sum_n N[n][l] < E_l, one slot is borrowed from the donor layer with
//    the largest surplus sum_n N[n][d] - E_d (the paper's "largest total";
//    the same when all layers have equally many experts; ties: lower layer)
//    on the first server, in descending memory (ties: lower index), that has
//    N[n][d] > 0 and N[n][l] < E_l. With equal sizes a short layer always
//    finds a donor (total slots >= total experts); with unequal sizes a layer
//    may stay short and Algorithm 2's repair covers it (below).
//  - Ties in top-N: higher global count (sum over nodes), then lower id.
//  - Duplicates: an expert a node holds that at least one other node also
//    holds, counted per node within the uncovered expert's layer, recounted
//    after every replacement. Uncovered experts are repaired in layer order,
//    then by global count (descending), then id. Ties between servers with
//    equally few duplicates: the one that uses the expert more, then the
//    lower index. The least-used duplicate: lowest count on that node, then
//    lowest global count, then higher id.
//  - A layer with no duplicate left (unequal sizes only): the expert replaces
//    the least-used duplicates of any layer, on the server with the fewest
//    duplicates overall that can free enough bytes on one of its devices;
//    failing that, one expert moves between devices to make room
//    (take_somewhere in node_room.h).
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/packing.h"
#include "scheduler/placement/types.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::placement {

struct DancemoeCounts {
  std::vector<std::vector<double>> entropy_bits;  // v[n][l]
  std::vector<std::vector<int64_t>> counts;       // N[n][l] after the rebalance
};

DancemoeCounts dancemoe_layer_counts(const Problem& problem, const Capacity& capacity);

Result<NodeChoice> dancemoe_assign(const Problem& problem, const Capacity& capacity,
                                   const DancemoeCounts& counts);

// Shannon entropy in bits of a non-negative count vector; log2(size) when the
// counts sum to zero (see above).
double entropy_bits(const double* counts, int32_t size);

}  // namespace dancemoe::placement
