#include "scheduler/store/count_blob.h"

#include <string>

#include "scheduler/store/varint.h"

namespace dancemoe::store {

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
