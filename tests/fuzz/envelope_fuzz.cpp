// Fuzz target: the protocol envelope decoder (every message a process
// receives from a socket goes through it) must return a Status for any bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/proto/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto result = dancemoe::proto::decode(std::span<const uint8_t>(data, size));
  if (result.is_ok()) {
    // Whatever decodes must re-encode and decode to the same value.
    auto again = dancemoe::proto::decode(dancemoe::proto::encode(*result));
    if (!again.is_ok() || !(*again == *result)) __builtin_trap();
  }
  return 0;
}
