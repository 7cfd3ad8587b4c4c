// Writes a safetensors file: the header for a declared list of tensors, then
// each tensor's bytes produced by a callback, in declaration order, so a
// multi-gigabyte file is written with one tensor in memory at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/tensor/dtype.h"

namespace dancemoe {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;

  uint64_t n_elements() const;
  uint64_t n_bytes() const { return n_elements() * dtype_size_bytes(dtype); }
};

// fill(tensor index, destination of exactly n_bytes()).
using TensorFill = std::function<void(size_t index, std::span<uint8_t> bytes)>;

Status write_safetensors(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                         const TensorFill& fill,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace dancemoe
