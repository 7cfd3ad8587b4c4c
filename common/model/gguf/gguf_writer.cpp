#include "common/model/gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/base/align.h"

namespace dancemoe::gguf {
namespace {

class Bytes {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) {
    while (out_.size() % alignment != 0) out_.push_back(0);
  }
  std::vector<uint8_t>& data() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

void put_value(Bytes& b, const Value& v) {
  switch (v.type) {
    case ValueType::kU8:
    case ValueType::kBool:
      b.put(static_cast<uint8_t>(v.integer));
      return;
    case ValueType::kI8:
      b.put(static_cast<int8_t>(v.integer));
      return;
    case ValueType::kU16:
      b.put(static_cast<uint16_t>(v.integer));
      return;
    case ValueType::kI16:
      b.put(static_cast<int16_t>(v.integer));
      return;
    case ValueType::kU32:
      b.put(static_cast<uint32_t>(v.integer));
      return;
    case ValueType::kI32:
      b.put(static_cast<int32_t>(v.integer));
      return;
    case ValueType::kU64:
      b.put(static_cast<uint64_t>(v.integer));
      return;
    case ValueType::kI64:
      b.put(static_cast<int64_t>(v.integer));
      return;
    case ValueType::kF32:
      b.put(static_cast<float>(v.real));
      return;
    case ValueType::kF64:
      b.put(v.real);
      return;
    case ValueType::kString:
      b.put_string(v.text);
      return;
    case ValueType::kArray: {
      b.put(static_cast<uint32_t>(v.array_type));
      b.put<uint64_t>(v.array_size);
      for (uint64_t i = 0; i < v.array_size; ++i) {
        Value item;
        item.type = v.array_type;
        if (v.array_type == ValueType::kString) {
          item.text = v.strings[i];
        } else if (v.array_type == ValueType::kF32 || v.array_type == ValueType::kF64) {
          item.real = v.reals[i];
        } else {
          item.integer = v.integers[i];
        }
        put_value(b, item);
      }
      return;
    }
  }
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  set_u32("general.alignment", alignment);
}

void GgufWriter::set_value(std::string_view key, Value value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::string(key), std::move(value));
}

void GgufWriter::set_u32(std::string_view key, uint32_t v) {
  Value value;
  value.type = ValueType::kU32;
  value.integer = v;
  set_value(key, std::move(value));
}

void GgufWriter::set_i32(std::string_view key, int32_t v) {
  Value value;
  value.type = ValueType::kI32;
  value.integer = v;
  set_value(key, std::move(value));
}

void GgufWriter::set_u64(std::string_view key, uint64_t v) {
  Value value;
  value.type = ValueType::kU64;
  value.integer = static_cast<int64_t>(v);
  set_value(key, std::move(value));
}

void GgufWriter::set_f32(std::string_view key, float v) {
  Value value;
  value.type = ValueType::kF32;
  value.real = v;
  set_value(key, std::move(value));
}

void GgufWriter::set_bool(std::string_view key, bool v) {
  Value value;
  value.type = ValueType::kBool;
  value.integer = v ? 1 : 0;
  set_value(key, std::move(value));
}

void GgufWriter::set_string(std::string_view key, std::string_view v) {
  Value value;
  value.type = ValueType::kString;
  value.text = std::string(v);
  set_value(key, std::move(value));
}

void GgufWriter::set_string_array(std::string_view key, std::vector<std::string> v) {
  Value value;
  value.type = ValueType::kArray;
  value.array_type = ValueType::kString;
  value.array_size = v.size();
  value.strings = std::move(v);
  set_value(key, std::move(value));
}

void GgufWriter::set_f32_array(std::string_view key, const std::vector<float>& v) {
  Value value;
  value.type = ValueType::kArray;
  value.array_type = ValueType::kF32;
  value.array_size = v.size();
  value.reals.assign(v.begin(), v.end());
  set_value(key, std::move(value));
}

void GgufWriter::set_i32_array(std::string_view key, const std::vector<int32_t>& v) {
  Value value;
  value.type = ValueType::kArray;
  value.array_type = ValueType::kI32;
  value.array_size = v.size();
  value.integers.assign(v.begin(), v.end());
  set_value(key, std::move(value));
}

size_t GgufWriter::add_tensor(std::string name, std::vector<int64_t> dims, uint32_t type_id) {
  TensorInfo t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  t.type_id = type_id;
  const TensorTypeInfo* info = tensor_type_info(type_id);
  t.n_bytes = info == nullptr
                  ? 0
                  : static_cast<uint64_t>(t.n_elements() / info->block_values * info->block_bytes);
  tensors_.push_back(std::move(t));
  return tensors_.size() - 1;
}

void GgufWriter::layout() {
  uint64_t offset = 0;
  for (TensorInfo& t : tensors_) {
    t.offset = offset;
    offset = align_up(offset + t.n_bytes, alignment_);
  }
}

std::vector<uint8_t> GgufWriter::header_bytes() {
  layout();
  Bytes b;
  b.put<uint32_t>(kMagic);
  b.put<uint32_t>(3);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    b.put_string(key);
    b.put(static_cast<uint32_t>(value.type));
    put_value(b, value);
  }
  for (const TensorInfo& t : tensors_) {
    b.put_string(t.name);
    b.put(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) b.put(static_cast<uint64_t>(d));
    b.put(t.type_id);
    b.put(t.offset);
  }
  b.pad_to(alignment_);
  return std::move(b.data());
}

Status GgufWriter::write(const std::filesystem::path& path, const Fill& fill) {
  const std::vector<uint8_t> header = header_bytes();
  const std::filesystem::path tmp = path.string() + ".partial";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable(tmp.string() + ": cannot open for writing");
  auto fail = [&](Status s) {
    out.close();
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return s;
  };
  out.write(reinterpret_cast<const char*>(header.data()),
            static_cast<std::streamsize>(header.size()));
  std::vector<uint8_t> bytes;
  static const char kZeros[64] = {};
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    bytes.clear();
    Status s = fill(i, &bytes);
    if (!s.is_ok()) return fail(s);
    if (bytes.size() != t.n_bytes) {
      return fail(internal_error("GGUF writer: tensor '" + t.name + "' got " +
                                 std::to_string(bytes.size()) + " bytes, expected " +
                                 std::to_string(t.n_bytes)));
    }
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    const uint64_t pad = align_up(t.n_bytes, alignment_) - t.n_bytes;
    if (i + 1 < tensors_.size()) {
      for (uint64_t left = pad; left > 0;) {
        const uint64_t n = left < sizeof kZeros ? left : sizeof kZeros;
        out.write(kZeros, static_cast<std::streamsize>(n));
        left -= n;
      }
    }
    if (!out) return fail(unavailable(tmp.string() + ": write failed (disk full?)"));
  }
  out.close();
  if (!out) return fail(unavailable(tmp.string() + ": write failed (disk full?)"));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return fail(unavailable(path.string() + ": cannot rename into place (" + ec.message() + ")"));
  return Status::ok();
}

}  // namespace dancemoe::gguf
