// Parsing and validation of GGUF files (the ggml/llama.cpp checkpoint
// format, versions 2 and 3; specification: ggml's docs/gguf.md, summarised
// in docs/gguf.md here).
//
// A GGUF file is: magic "GGUF", u32 version, u64 tensor count, u64 metadata
// count, the metadata key/value pairs (typed values, arrays of them), the
// tensor infos (name, dims, ggml type, offset), padding to the alignment
// (`general.alignment`, default 32), then the tensor data, each tensor at an
// aligned offset relative to the start of the data section.
//
// parse_gguf() checks everything before any tensor byte is used: every read
// against the end of the bytes (so a truncated file is an error, never a
// read past the end), counts and lengths against the bytes left (so a
// hostile header cannot make it allocate more than the file's size), key and
// name lengths, value and tensor types, bools, duplicate keys and tensor
// names, dims (at most 4, each >= 1, no overflow, the first a multiple of
// the type's block), the alignment (a power of two), and that each tensor's
// bytes are aligned, lie inside the file and overlap no other tensor. Every
// error names the file and the key or tensor at fault. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "kernels/kernels.h"

namespace dancemoe::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
std::string_view value_type_name(ValueType type);

// One metadata value. Integer and bool scalars keep their exact value in
// `integer` (u64 above INT64_MAX is flagged by `integer_overflows`), floats
// in `real`, strings in `text`. Arrays record their element type and size
// and keep the elements of one kind: integers and bools in `integers`,
// floats in `reals`, strings in `strings` (arrays of arrays: size only).
struct Value {
  ValueType type = ValueType::kU8;
  int64_t integer = 0;
  bool integer_overflows = false;
  double real = 0.0;
  std::string text;
  ValueType array_type = ValueType::kU8;
  uint64_t array_size = 0;
  std::vector<int64_t> integers;
  std::vector<double> reals;
  std::vector<std::string> strings;

  bool is_integer() const;  // any integer scalar type (not bool)
  bool is_float() const;    // f32 / f64 scalar
};

// The ggml tensor types: id, name and block geometry of every type the
// specification lists (the runtime computes only some: runtime_type()).
struct TensorTypeInfo {
  uint32_t id;
  std::string_view name;
  int64_t block_values;
  int64_t block_bytes;
};
// nullptr for an id the specification does not define.
const TensorTypeInfo* tensor_type_info(uint32_t id);
// The kernels' WeightType for a ggml type id, or nullopt when the runtime
// cannot compute with it (q4_1, the iq formats, ...).
std::optional<kernels::WeightType> runtime_type(uint32_t id);
// The ggml type id of a WeightType.
uint32_t ggml_type_id(kernels::WeightType type);

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order: dims[0] is the contiguous one (a row's length)
  uint32_t type_id = 0;       // ggml type
  uint64_t offset = 0;        // relative to the data section, aligned
  uint64_t n_bytes = 0;

  int64_t n_elements() const;
};

struct File {
  uint32_t version = 0;
  uint32_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;  // absolute offset of the data section
  std::map<std::string, Value> metadata;
  std::vector<TensorInfo> tensors;  // in header order

  const Value* find(std::string_view key) const;
  const TensorInfo* find_tensor(std::string_view name) const;
};

// `bytes` is the whole file (a memory mapping), `file_name` what errors name.
Result<File> parse_gguf(std::span<const uint8_t> bytes, std::string_view file_name);

}  // namespace dancemoe::gguf
