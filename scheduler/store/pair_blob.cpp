#include "scheduler/store/pair_blob.h"

#include <string>

#include "scheduler/store/varint.h"

namespace dancemoe::store {
namespace {

uint64_t key_of(const PairEntry& e) {
  return (static_cast<uint64_t>(e.layer) << 32) | (static_cast<uint64_t>(e.a) << 16) | e.b;
}

}  // namespace

std::vector<uint8_t> encode_pairs(std::span<const PairEntry> entries) {
  std::vector<uint8_t> out;
  out.reserve(2 + entries.size() * 4);
  put_varint(out, entries.size());
  uint64_t previous = 0;
  for (const PairEntry& e : entries) {
    put_varint(out, key_of(e) - previous);
    put_varint(out, e.count);
    previous = key_of(e);
  }
  return out;
}

Status decode_pairs(std::span<const uint8_t> blob,
                    const std::function<void(const PairEntry&)>& visit) {
  size_t pos = 0;
  uint64_t n = 0;
  if (!get_varint(blob, pos, n)) return invalid_argument("pair blob: truncated entry count");
  // Every entry takes at least two bytes.
  if (n > blob.size() / 2) {
    return invalid_argument("pair blob: " + std::to_string(n) + " entries cannot fit in " +
                            std::to_string(blob.size()) + " bytes");
  }
  uint64_t key = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t delta = 0, count = 0;
    if (!get_varint(blob, pos, delta) || !get_varint(blob, pos, count)) {
      return invalid_argument("pair blob: truncated at entry " + std::to_string(i));
    }
    if (i > 0 && delta == 0) {
      return invalid_argument("pair blob: entry " + std::to_string(i) + " repeats a key");
    }
    if (delta > 0xffffffffffffull - key) {
      return invalid_argument("pair blob: entry " + std::to_string(i) + " key out of range");
    }
    key += delta;
    const PairEntry e{static_cast<uint16_t>(key >> 32), static_cast<uint16_t>((key >> 16) & 0xffff),
                      static_cast<uint16_t>(key & 0xffff), count};
    if (e.a >= e.b) {
      return invalid_argument("pair blob: entry " + std::to_string(i) + " has expert " +
                              std::to_string(e.a) + " not below " + std::to_string(e.b));
    }
    visit(e);
  }
  if (pos != blob.size()) {
    return invalid_argument("pair blob: " + std::to_string(blob.size() - pos) + " trailing bytes");
  }
  return Status::ok();
}

}  // namespace dancemoe::store
