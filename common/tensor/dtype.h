// Element types of tensors on disk and in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/kernels.h"

namespace dancemoe {

enum class DType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

size_t dtype_size_bytes(DType dtype);
// The safetensors spelling: "F32", "F16", "BF16".
std::string_view dtype_name(DType dtype);
// Parses a safetensors dtype; nullopt for types the runtime does not compute with.
std::optional<DType> parse_dtype(std::string_view name);

kernels::WeightType to_weight_type(DType dtype);

}  // namespace dancemoe
