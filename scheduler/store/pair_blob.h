// Packing of co-activation pair counts (issue 17; the pairs a node reports,
// common/placement/coactivation.h) into one SQLite blob, the way
// count_blob.h packs activation counts:
//
//   varint(n_entries), then per entry, sorted by key = layer << 32 | a << 16 | b:
//   varint(key - previous key) varint(count)
//
// decode_pairs never trusts the blob: it checks lengths, varint termination,
// key order, a < b and ranges, and returns invalid_argument naming what is
// wrong. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::store {

struct PairEntry {
  uint16_t layer = 0;
  uint16_t a = 0;  // a < b
  uint16_t b = 0;
  uint64_t count = 0;
  friend bool operator==(const PairEntry&, const PairEntry&) = default;
};

// Entries sorted by (layer, a, b) with no repeats (the caller validated them).
std::vector<uint8_t> encode_pairs(std::span<const PairEntry> entries);

Status decode_pairs(std::span<const uint8_t> blob,
                    const std::function<void(const PairEntry&)>& visit);

}  // namespace dancemoe::store
