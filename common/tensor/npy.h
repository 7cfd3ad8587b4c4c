// Writes NumPy .npy files (format 1.0, little-endian float32, C order).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

Status write_npy_f32(const std::filesystem::path& path, std::span<const float> data,
                     const std::vector<int64_t>& shape);

// Reads a float32 C-order .npy written by write_npy_f32 or NumPy.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
Result<NpyArray> read_npy_f32(const std::filesystem::path& path);

}  // namespace dancemoe
