// Parsing and validation of safetensors file headers.
//
// A safetensors file is: u64 little-endian header length N, N bytes of JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the data section. Offsets are relative to the data section.
// parse_safetensors_header() checks everything before any tensor byte is
// touched: the length against the file size, the JSON, each dtype, that
// shape x dtype size equals the byte range, that ranges lie inside the data
// section and do not overlap, and duplicate names. Every error names the file
// and the tensor or field at fault. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/tensor/dtype.h"

namespace dancemoe {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t data_begin = 0;  // relative to the data section
  uint64_t data_end = 0;

  uint64_t n_bytes() const { return data_end - data_begin; }
};

struct SafetensorsHeader {
  uint64_t data_offset = 0;                // absolute file offset of the data section (8 + N)
  uint64_t data_bytes = 0;                 // size of the data section
  std::vector<SafetensorsTensor> tensors;  // in data order
  std::map<std::string, std::string> metadata;
};

// Largest header accepted, as in the reference implementation.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// `bytes` is a prefix of the file (at least the 8-byte length and the
// header, when the file has them); `file_size` is the whole file's size.
Result<SafetensorsHeader> parse_safetensors_header(std::span<const uint8_t> bytes,
                                                   uint64_t file_size, std::string_view file_name);

// Reads just the header of the file at `path` and parses it.
Result<SafetensorsHeader> read_safetensors_header(const std::filesystem::path& path);

}  // namespace dancemoe
