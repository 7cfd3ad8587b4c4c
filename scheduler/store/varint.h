// LEB128 varints, the unit of the store's blobs (count_blob.h, pair_blob.h).
// Header-only; pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dancemoe::store {

inline void put_varint(std::vector<uint8_t>& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

// Reads one varint at `pos`; false when the blob ends first or the varint
// is longer than 10 bytes (more than 64 bits).
inline bool get_varint(std::span<const uint8_t> blob, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= blob.size()) return false;
    const uint8_t byte = blob[pos++];
    if (shift == 63 && byte > 1) return false;  // would overflow 64 bits
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace dancemoe::store
