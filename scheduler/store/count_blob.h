// Packing of sparse activation counts into one SQLite blob.
//
// A report of an OLMoE-shaped model carries up to 16 x 64 = 1024
// (layer, expert, count) entries; one SQLite row per entry would cost about
// 30 bytes and a B-tree insert each, so a week of reports would not fit the
// storage budget and ingest would be bound by row inserts. The counts of one
// report (or one roll-up bucket) are therefore one blob:
//
//   varint(n_entries), then per entry, sorted by key = layer << 16 | expert:
//   varint(key - previous key) varint(count)
//
// (LEB128 varints, previous key starts at 0; the first delta is the key
// itself and later deltas are >= 1, so keys are strictly increasing). A
// dense OLMoE report packs into about 2-3 bytes per entry.
//
// decode_counts never trusts the blob (a database file can be damaged or
// edited): it checks lengths, varint termination, key order and ranges, and
// returns invalid_argument naming what is wrong. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::store {

struct CountEntry {
  uint16_t layer = 0;
  uint16_t expert = 0;
  uint64_t count = 0;
  friend bool operator==(const CountEntry&, const CountEntry&) = default;
};

// Entries must be sorted by (layer, expert) with no repeats (the caller
// validated the report); zero counts may be left out by the caller.
std::vector<uint8_t> encode_counts(std::span<const CountEntry> entries);

// Calls `visit` for every entry in order.
Status decode_counts(std::span<const uint8_t> blob,
                     const std::function<void(const CountEntry&)>& visit);

Result<std::vector<CountEntry>> decode_counts(std::span<const uint8_t> blob);

}  // namespace dancemoe::store
