#include "common/model/gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace dancemoe::gguf {
namespace {

// Keys longer than this are invalid (the specification's limit).
constexpr uint64_t kMaxKeyBytes = 65535;
// Tensor names: the specification says 64 bytes; some writers exceed it
// slightly, so allow more, but bounded.
constexpr uint64_t kMaxTensorNameBytes = 256;
// Nested arrays deeper than this are refused (the parser recurses).
constexpr int kMaxArrayDepth = 4;

constexpr TensorTypeInfo kTensorTypes[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
};

// Bounds-checked little-endian reader over the file's bytes. Every read
// reports failure instead of reading past the end.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }

  template <typename T>
  bool read(T* out) {
    if (left() < sizeof(T)) return false;
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool read_string(std::string* out, uint64_t max_len, uint64_t* len_out) {
    uint64_t len;
    if (!read(&len)) return false;
    *len_out = len;
    if (len > max_len || len > left()) return false;
    out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += len;
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

// Bytes every element of a value type occupies at least (strings: their length field).
uint64_t min_value_bytes(ValueType type) {
  switch (type) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
    case ValueType::kString:
      return 8;
    case ValueType::kArray:
      return 12;  // element type + count
  }
  return 1;
}

bool valid_value_type(uint32_t raw) { return raw <= static_cast<uint32_t>(ValueType::kF64); }

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, std::string_view file_name)
      : in_(bytes), file_(file_name) {}

  Result<File> parse();

 private:
  Status fail(const std::string& where, const std::string& what) const {
    return invalid_argument(file_ + ": " + where + ": " + what);
  }
  Status truncated(const std::string& where) const {
    return fail(where, "the file ends at byte " + std::to_string(in_.pos()) +
                           " in the middle of it (truncated file?)");
  }
  Status parse_header(File* file, uint64_t* n_tensors, uint64_t* n_kv);
  Status parse_kv(File* file);
  // One value of `type`; into `array_out` when it is an array element.
  Status parse_scalar(ValueType type, const std::string& key, Value* value);
  Status parse_array(const std::string& key, Value* value, int depth);
  Status parse_tensor_info(File* file);
  Status check_alignment(File* file);
  Status check_tensor_data(File* file, uint64_t file_size);

  Reader in_;
  std::string file_;
};

Status Parser::parse_header(File* file, uint64_t* n_tensors, uint64_t* n_kv) {
  uint32_t magic;
  if (!in_.read(&magic)) return fail("header", "shorter than the 4-byte magic");
  if (magic != kMagic) {
    return fail("header", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  }
  if (!in_.read(&file->version)) return truncated("header version");
  if (file->version == 1) {
    return fail("header", "GGUF version 1 (pre-2023 llama.cpp) is not supported; expected 2 or 3");
  }
  if (file->version != 2 && file->version != 3) {
    // A big-endian file reads its version byte-swapped (3 -> 0x03000000).
    const bool swapped = file->version == 0x02000000u || file->version == 0x03000000u;
    return fail("header", swapped ? std::string("big-endian GGUF files are not supported")
                                  : "unknown GGUF version " + std::to_string(file->version) +
                                        "; expected 2 or 3");
  }
  if (!in_.read(n_tensors)) return truncated("header tensor count");
  if (!in_.read(n_kv)) return truncated("header metadata count");
  // Each key/value takes at least 13 bytes and each tensor info 28: larger
  // counts cannot be genuine, and would otherwise size allocations.
  if (*n_kv > in_.left() / 13) {
    return fail("header", "metadata count " + std::to_string(*n_kv) +
                              " is more than the file's remaining bytes can hold");
  }
  if (*n_tensors > in_.left() / 28) {
    return fail("header", "tensor count " + std::to_string(*n_tensors) +
                              " is more than the file's remaining bytes can hold");
  }
  return Status::ok();
}

Status Parser::parse_scalar(ValueType type, const std::string& key, Value* value) {
  const std::string where = "metadata '" + key + "'";
  auto integer = [&](auto v) {
    value->integer = static_cast<int64_t>(v);
    return Status::ok();
  };
  switch (type) {
    case ValueType::kU8: {
      uint8_t v;
      return in_.read(&v) ? integer(v) : truncated(where);
    }
    case ValueType::kI8: {
      int8_t v;
      return in_.read(&v) ? integer(v) : truncated(where);
    }
    case ValueType::kU16: {
      uint16_t v;
      return in_.read(&v) ? integer(v) : truncated(where);
    }
    case ValueType::kI16: {
      int16_t v;
      return in_.read(&v) ? integer(v) : truncated(where);
    }
    case ValueType::kU32: {
      uint32_t v;
      return in_.read(&v) ? integer(v) : truncated(where);
    }
    case ValueType::kI32: {
      int32_t v;
      return in_.read(&v) ? integer(v) : truncated(where);
    }
    case ValueType::kU64: {
      uint64_t v;
      if (!in_.read(&v)) return truncated(where);
      value->integer_overflows = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      return integer(v);
    }
    case ValueType::kI64: {
      int64_t v;
      return in_.read(&v) ? integer(v) : truncated(where);
    }
    case ValueType::kF32: {
      float v;
      if (!in_.read(&v)) return truncated(where);
      value->real = v;
      return Status::ok();
    }
    case ValueType::kF64: {
      double v;
      if (!in_.read(&v)) return truncated(where);
      value->real = v;
      return Status::ok();
    }
    case ValueType::kBool: {
      uint8_t v;
      if (!in_.read(&v)) return truncated(where);
      if (v > 1) return fail(where, "bool value " + std::to_string(v) + " (expected 0 or 1)");
      return integer(v);
    }
    case ValueType::kString: {
      uint64_t len = 0;
      if (!in_.read_string(&value->text, in_.left(), &len)) {
        return in_.left() < 8 ? truncated(where)
                              : fail(where, "string length " + std::to_string(len) +
                                                " runs past the end of the file");
      }
      return Status::ok();
    }
    case ValueType::kArray:
      break;
  }
  return fail(where, "internal: parse_scalar on an array");
}

Status Parser::parse_array(const std::string& key, Value* value, int depth) {
  const std::string where = "metadata '" + key + "'";
  uint32_t raw_type;
  uint64_t count;
  if (!in_.read(&raw_type) || !in_.read(&count)) return truncated(where);
  if (!valid_value_type(raw_type)) {
    return fail(where, "array of unknown value type " + std::to_string(raw_type));
  }
  const auto elem = static_cast<ValueType>(raw_type);
  if (count > in_.left() / min_value_bytes(elem)) {
    return fail(where, "array of " + std::to_string(count) + " " +
                           std::string(value_type_name(elem)) +
                           " values is longer than the rest of the file");
  }
  value->array_type = elem;
  value->array_size = count;
  if (elem == ValueType::kArray) {
    if (depth >= kMaxArrayDepth) return fail(where, "arrays nested deeper than 4 levels");
    for (uint64_t i = 0; i < count; ++i) {
      Value inner;
      DMOE_RETURN_IF_ERROR(parse_array(key, &inner, depth + 1));
    }
    return Status::ok();
  }
  const size_t n = static_cast<size_t>(count);
  if (elem == ValueType::kString) {
    value->strings.resize(n);
  } else if (elem == ValueType::kF32 || elem == ValueType::kF64) {
    value->reals.resize(n);
  } else {
    value->integers.resize(n);
  }
  Value item;
  for (size_t i = 0; i < n; ++i) {
    DMOE_RETURN_IF_ERROR(parse_scalar(elem, key + "[" + std::to_string(i) + "]", &item));
    if (elem == ValueType::kString) {
      value->strings[i] = std::move(item.text);
    } else if (elem == ValueType::kF32 || elem == ValueType::kF64) {
      value->reals[i] = item.real;
    } else {
      value->integers[i] = item.integer;
    }
  }
  return Status::ok();
}

Status Parser::parse_kv(File* file) {
  std::string key;
  uint64_t key_len = 0;
  const uint64_t at = in_.pos();
  if (!in_.read_string(&key, kMaxKeyBytes, &key_len)) {
    if (in_.left() < 8 || key_len > in_.left()) {
      return truncated("metadata key at byte " + std::to_string(at));
    }
    return fail("metadata key at byte " + std::to_string(at),
                "key length " + std::to_string(key_len) + " exceeds 65535");
  }
  if (key.empty()) return fail("metadata key at byte " + std::to_string(at), "empty key");
  if (file->metadata.count(key)) return fail("metadata '" + key + "'", "duplicate key");
  uint32_t raw_type;
  if (!in_.read(&raw_type)) return truncated("metadata '" + key + "'");
  if (!valid_value_type(raw_type)) {
    return fail("metadata '" + key + "'", "unknown value type " + std::to_string(raw_type));
  }
  Value value;
  value.type = static_cast<ValueType>(raw_type);
  if (value.type == ValueType::kArray) {
    DMOE_RETURN_IF_ERROR(parse_array(key, &value, 0));
  } else {
    DMOE_RETURN_IF_ERROR(parse_scalar(value.type, key, &value));
  }
  file->metadata.emplace(std::move(key), std::move(value));
  return Status::ok();
}

Status Parser::parse_tensor_info(File* file) {
  TensorInfo t;
  uint64_t len = 0;
  const uint64_t at = in_.pos();
  const std::string where_at = "tensor info at byte " + std::to_string(at);
  if (!in_.read_string(&t.name, kMaxTensorNameBytes, &len)) {
    if (in_.left() < 8 || len > in_.left()) return truncated(where_at);
    return fail(where_at, "tensor name of " + std::to_string(len) + " bytes (at most " +
                              std::to_string(kMaxTensorNameBytes) + ")");
  }
  const std::string where = "tensor '" + t.name + "'";
  uint32_t n_dims;
  if (!in_.read(&n_dims)) return truncated(where);
  if (n_dims == 0 || n_dims > kMaxDims) {
    return fail(where, std::to_string(n_dims) + " dimensions (expected 1 to 4)");
  }
  t.dims.resize(n_dims);
  uint64_t n_elements = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    uint64_t d;
    if (!in_.read(&d)) return truncated(where);
    if (d == 0 || d > (uint64_t{1} << 40) || n_elements > (uint64_t{1} << 62) / d) {
      return fail(where, "dimension " + std::to_string(i) + " = " + std::to_string(d) +
                             " (each must be >= 1 and the product below 2^62)");
    }
    t.dims[i] = static_cast<int64_t>(d);
    n_elements *= d;
  }
  if (!in_.read(&t.type_id)) return truncated(where);
  const TensorTypeInfo* info = tensor_type_info(t.type_id);
  if (info == nullptr) {
    return fail(where, "unknown ggml tensor type " + std::to_string(t.type_id));
  }
  if (t.dims[0] % info->block_values != 0) {
    return fail(where, "row length " + std::to_string(t.dims[0]) + " is not a multiple of " +
                           std::string(info->name) + "'s block of " +
                           std::to_string(info->block_values));
  }
  t.n_bytes = n_elements / static_cast<uint64_t>(info->block_values) *
              static_cast<uint64_t>(info->block_bytes);
  if (!in_.read(&t.offset)) return truncated(where);
  file->tensors.push_back(std::move(t));
  return Status::ok();
}

Status Parser::check_alignment(File* file) {
  const Value* v = file->find("general.alignment");
  if (v == nullptr) return Status::ok();
  if (!v->is_integer()) {
    return fail("metadata 'general.alignment'",
                "expected an unsigned integer, got " + std::string(value_type_name(v->type)));
  }
  const int64_t a = v->integer;
  if (a <= 0 || a > (1 << 20) || (a & (a - 1)) != 0) {
    return fail("metadata 'general.alignment'",
                std::to_string(a) + " is not a power of two between 1 and 2^20");
  }
  file->alignment = static_cast<uint32_t>(a);
  return Status::ok();
}

Status Parser::check_tensor_data(File* file, uint64_t file_size) {
  // Names unique.
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(file->tensors.size());
  {
    std::map<std::string_view, int> seen;
    for (const TensorInfo& t : file->tensors) {
      if (!seen.emplace(t.name, 0).second) {
        return fail("tensor '" + t.name + "'", "duplicate tensor name");
      }
      by_offset.push_back(&t);
    }
  }
  const uint64_t data_bytes = file_size - file->data_offset;
  for (const TensorInfo& t : file->tensors) {
    const std::string where = "tensor '" + t.name + "'";
    if (t.offset % file->alignment != 0) {
      return fail(where, "data offset " + std::to_string(t.offset) + " is not a multiple of the " +
                             std::to_string(file->alignment) + "-byte alignment");
    }
    if (t.offset > data_bytes || t.n_bytes > data_bytes - t.offset) {
      return fail(where, "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                             ") runs past the end of the file's " + std::to_string(data_bytes) +
                             "-byte data section (truncated file?)");
    }
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    if (prev.offset + prev.n_bytes > by_offset[i]->offset) {
      return fail("tensor '" + by_offset[i]->name + "'",
                  "its data overlaps tensor '" + prev.name + "'");
    }
  }
  return Status::ok();
}

Result<File> Parser::parse() {
  File file;
  uint64_t n_tensors = 0, n_kv = 0;
  DMOE_RETURN_IF_ERROR(parse_header(&file, &n_tensors, &n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) DMOE_RETURN_IF_ERROR(parse_kv(&file));
  DMOE_RETURN_IF_ERROR(check_alignment(&file));
  file.tensors.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) DMOE_RETURN_IF_ERROR(parse_tensor_info(&file));
  const uint64_t end_of_infos = in_.pos();
  file.data_offset = (end_of_infos + file.alignment - 1) / file.alignment * file.alignment;
  const uint64_t file_size = end_of_infos + in_.left();
  if (file.data_offset > file_size) {
    if (n_tensors == 0) {
      file.data_offset = file_size;  // a metadata-only file need not pad its end
    } else {
      return fail("data section", "the file ends before the data section starts at byte " +
                                      std::to_string(file.data_offset) + " (truncated file?)");
    }
  }
  DMOE_RETURN_IF_ERROR(check_tensor_data(&file, file_size));
  return file;
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kU8:
      return "uint8";
    case ValueType::kI8:
      return "int8";
    case ValueType::kU16:
      return "uint16";
    case ValueType::kI16:
      return "int16";
    case ValueType::kU32:
      return "uint32";
    case ValueType::kI32:
      return "int32";
    case ValueType::kF32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kU64:
      return "uint64";
    case ValueType::kI64:
      return "int64";
    case ValueType::kF64:
      return "float64";
  }
  return "unknown";
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kU64:
    case ValueType::kI64:
      return true;
    default:
      return false;
  }
}

bool Value::is_float() const { return type == ValueType::kF32 || type == ValueType::kF64; }

const TensorTypeInfo* tensor_type_info(uint32_t id) {
  for (const TensorTypeInfo& t : kTensorTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

std::optional<kernels::WeightType> runtime_type(uint32_t id) {
  using kernels::WeightType;
  switch (id) {
    case 0:
      return WeightType::kF32;
    case 1:
      return WeightType::kF16;
    case 2:
      return WeightType::kQ4_0;
    case 8:
      return WeightType::kQ8_0;
    case 12:
      return WeightType::kQ4_K;
    case 13:
      return WeightType::kQ5_K;
    case 14:
      return WeightType::kQ6_K;
    case 30:
      return WeightType::kBF16;
    case 39:
      return WeightType::kMXFP4;
    default:
      return std::nullopt;
  }
}

uint32_t ggml_type_id(kernels::WeightType type) {
  using kernels::WeightType;
  switch (type) {
    case WeightType::kF32:
      return 0;
    case WeightType::kF16:
      return 1;
    case WeightType::kQ4_0:
      return 2;
    case WeightType::kQ8_0:
      return 8;
    case WeightType::kQ4_K:
      return 12;
    case WeightType::kQ5_K:
      return 13;
    case WeightType::kQ6_K:
      return 14;
    case WeightType::kBF16:
      return 30;
    case WeightType::kMXFP4:
      return 39;
  }
  return 0;
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const Value* File::find(std::string_view key) const {
  auto it = metadata.find(std::string(key));
  return it == metadata.end() ? nullptr : &it->second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<File> parse_gguf(std::span<const uint8_t> bytes, std::string_view file_name) {
  return Parser(bytes, file_name).parse();
}

}  // namespace dancemoe::gguf
