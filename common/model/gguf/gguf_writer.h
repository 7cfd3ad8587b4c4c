// GgufWriter: writes a GGUF version 3 file (docs/gguf.md) -- metadata in the
// order it was set, tensor infos, padding to the alignment, then each
// tensor's bytes at an aligned offset -- streaming the tensor data, so a
// multi-gigabyte model is never held in memory at once.
//
// Usage: set metadata, add_tensor() for each tensor (its dims in GGUF order,
// dims[0] the row length), then write(path, fill): fill(i, &bytes) must
// produce exactly tensor i's n_bytes. The file is written to a temporary
// name and renamed into place, so a failure leaves no partial file.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/status.h"
#include "common/model/gguf/gguf_file.h"

namespace dancemoe::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = kDefaultAlignment);

  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_f32(std::string_view key, float v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_string_array(std::string_view key, std::vector<std::string> v);
  void set_f32_array(std::string_view key, const std::vector<float>& v);
  void set_i32_array(std::string_view key, const std::vector<int32_t>& v);
  // Any value as parse_gguf() reads it (to copy a file's metadata); arrays
  // of arrays, which it keeps only the size of, cannot be written.
  void set_value(std::string_view key, Value value);

  // Returns the tensor's index.
  size_t add_tensor(std::string name, std::vector<int64_t> dims, uint32_t type_id);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  using Fill = std::function<Status(size_t tensor_index, std::vector<uint8_t>* bytes)>;
  Status write(const std::filesystem::path& path, const Fill& fill);

  // Header bytes as write() would produce them (tests, fuzz corpora).
  std::vector<uint8_t> header_bytes();

 private:
  void layout();  // assigns tensor offsets

  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace dancemoe::gguf
