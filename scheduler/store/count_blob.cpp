#include "scheduler/store/count_blob.h"

#include <string>

namespace dancemoe::store {
namespace {

void put_varint(std::vector<uint8_t>& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

// Reads one varint at `pos`; false when the blob ends first or the varint
// is longer than 10 bytes (more than 64 bits).
bool get_varint(std::span<const uint8_t> blob, size_t& pos, uint64_t& value) {
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

}  // namespace

std::vector<uint8_t> encode_counts(std::span<const CountEntry> entries) {
  std::vector<uint8_t> out;
  out.reserve(2 + entries.size() * 3);
  put_varint(out, entries.size());
  uint64_t previous = 0;
  for (const CountEntry& e : entries) {
    const uint64_t key = (static_cast<uint64_t>(e.layer) << 16) | e.expert;
    put_varint(out, key - previous);
    put_varint(out, e.count);
    previous = key;
  }
  return out;
}

Status decode_counts(std::span<const uint8_t> blob,
                     const std::function<void(const CountEntry&)>& visit) {
  size_t pos = 0;
  uint64_t n = 0;
  if (!get_varint(blob, pos, n)) return invalid_argument("count blob: truncated entry count");
  // Every entry takes at least two bytes: a bound that keeps a damaged
  // count from driving a long loop.
  if (n > blob.size() / 2) {
    return invalid_argument("count blob: " + std::to_string(n) + " entries cannot fit in " +
                            std::to_string(blob.size()) + " bytes");
  }
  uint64_t key = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t delta = 0;
    uint64_t count = 0;
    if (!get_varint(blob, pos, delta) || !get_varint(blob, pos, count)) {
      return invalid_argument("count blob: truncated at entry " + std::to_string(i));
    }
    if (i > 0 && delta == 0) {
      return invalid_argument("count blob: entry " + std::to_string(i) + " repeats a key");
    }
    if (delta > 0xffffffffull - key) {
      return invalid_argument("count blob: entry " + std::to_string(i) + " key out of range");
    }
    key += delta;
    visit(CountEntry{static_cast<uint16_t>(key >> 16), static_cast<uint16_t>(key & 0xffff), count});
  }
  if (pos != blob.size()) {
    return invalid_argument("count blob: " + std::to_string(blob.size() - pos) + " trailing bytes");
  }
  return Status::ok();
}

Result<std::vector<CountEntry>> decode_counts(std::span<const uint8_t> blob) {
  std::vector<CountEntry> out;
  DMOE_RETURN_IF_ERROR(decode_counts(blob, [&out](const CountEntry& e) { out.push_back(e); }));
  return out;
}

}  // namespace dancemoe::store
