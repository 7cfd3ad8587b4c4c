// Fuzz target: the safetensors header parser must return a Status -- never
// crash, hang or read out of bounds -- for any bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto result = dancemoe::parse_safetensors_header(bytes, size, "fuzz.safetensors");
  if (result.is_ok()) {
    // Whatever was accepted must be internally consistent.
    for (const auto& t : result->tensors) {
      if (t.data_end > result->data_bytes || t.data_begin > t.data_end) __builtin_trap();
    }
  }
  return 0;
}
