// Rounding sizes and offsets up to an alignment. Pure; thread-safe.
#pragma once

#include <cstdint>

namespace dancemoe {

// The smallest multiple of `alignment` (> 0) that is >= n.
constexpr uint64_t align_up(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace dancemoe
