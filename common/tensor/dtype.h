// Element types of tensors on disk and in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/kernels.h"

namespace dancemoe {

// kU8: raw bytes in a safetensors file (gpt-oss's MXFP4 blocks and scales),
// read only through a view that knows their layout (checkpoint.h); never a
// weight, activation or wire element type.
enum class DType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kU8 = 3 };

size_t dtype_size_bytes(DType dtype);
// The safetensors spelling: "F32", "F16", "BF16", "U8".
std::string_view dtype_name(DType dtype);
// Parses a safetensors dtype; nullopt for types the runtime does not compute with.
std::optional<DType> parse_dtype(std::string_view name);

// The weight type of a float dtype (kU8 has none: kF32 is returned, callers check).
kernels::WeightType to_weight_type(DType dtype);

}  // namespace dancemoe
