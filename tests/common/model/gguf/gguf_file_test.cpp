// The GGUF parser on files written by GgufWriter and on every kind of bad
// input the specification rules out: each must be an invalid_argument whose
// message names the file and the key or tensor, never a crash.
#include "common/model/gguf/gguf_file.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/model/gguf/gguf_writer.h"

namespace dancemoe::gguf {
namespace {

// A small valid file: metadata of several types and three tensors of
// different types.
void fill_sample(GgufWriter& w) {
  w.set_string("general.architecture", "qwen3moe");
  w.set_u32("qwen3moe.block_count", 2);
  w.set_f32("qwen3moe.rope.freq_base", 1e6f);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.set_f32_array("tokenizer.ggml.scores", {0.0f, -1.0f, -2.0f});
  w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 3});
  w.add_tensor("token_embd.weight", {64, 3}, 8);                // q8_0: 3 rows x 2 blocks
  w.add_tensor("output_norm.weight", {64}, 0);                  // f32
  w.add_tensor("blk.0.ffn_gate_exps.weight", {256, 2, 4}, 12);  // q4_K, 4 experts
}

// Header bytes only, then data appended so every tensor fits.
std::vector<uint8_t> with_data(GgufWriter& w) {
  std::vector<uint8_t> bytes = w.header_bytes();
  const size_t header = bytes.size();
  uint64_t end = 0;
  for (const TensorInfo& t : w.tensors()) end = std::max(end, t.offset + t.n_bytes);
  bytes.resize(header + end, 0x5A);
  return bytes;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  Result<File> f = parse_gguf(bytes, "model.gguf");
  REQUIRE_FALSE(f.is_ok());
  CHECK(f.status().code() == StatusCode::kInvalidArgument);
  CHECK(f.status().message().find("model.gguf") != std::string::npos);
  return f.status().message();
}

TEST_CASE("gguf: a written file parses back with its metadata and tensors") {
  GgufWriter w;
  fill_sample(w);
  const std::vector<uint8_t> bytes = with_data(w);
  Result<File> f = parse_gguf(bytes, "model.gguf");
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  CHECK(f->version == 3);
  CHECK(f->alignment == 32);
  CHECK(f->data_offset % 32 == 0);
  REQUIRE(f->find("general.architecture") != nullptr);
  CHECK(f->find("general.architecture")->text == "qwen3moe");
  CHECK(f->find("qwen3moe.block_count")->integer == 2);
  CHECK(f->find("qwen3moe.rope.freq_base")->real == doctest::Approx(1e6));
  CHECK(f->find("tokenizer.ggml.add_bos_token")->type == ValueType::kBool);
  CHECK(f->find("tokenizer.ggml.tokens")->strings == std::vector<std::string>{"a", "b", "ab"});
  CHECK(f->find("tokenizer.ggml.scores")->reals[2] == -2.0);
  CHECK(f->find("tokenizer.ggml.token_type")->integers[2] == 3);
  REQUIRE(f->tensors.size() == 3);
  const TensorInfo* experts = f->find_tensor("blk.0.ffn_gate_exps.weight");
  REQUIRE(experts != nullptr);
  CHECK(experts->dims == std::vector<int64_t>{256, 2, 4});
  CHECK(experts->n_bytes == 8 * 144);
  CHECK(experts->offset % 32 == 0);
  CHECK(f->find_tensor("token_embd.weight")->n_bytes == 6 * 34);
  CHECK(runtime_type(experts->type_id) == kernels::WeightType::kQ4_K);
  CHECK_FALSE(runtime_type(3).has_value());  // q4_1: known, not computed
  CHECK(tensor_type_info(3)->name == "q4_1");
}

TEST_CASE("gguf: every truncation of a valid file is an error naming the file") {
  GgufWriter w;
  fill_sample(w);
  const std::vector<uint8_t> bytes = with_data(w);
  for (size_t n = 0; n < bytes.size(); n += (n < 600 ? 1 : 97)) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    INFO("truncated to ", n, " bytes");
    const std::string msg = error_of(cut);
    CHECK(!msg.empty());
  }
  const std::string msg = error_of(std::vector<uint8_t>(bytes.begin(), bytes.end() - 1));
  CHECK(msg.find("tensor 'blk.0.ffn_gate_exps.weight'") != std::string::npos);
  CHECK(msg.find("truncated") != std::string::npos);
}

TEST_CASE("gguf: bad magic, version and big-endian files are refused") {
  std::vector<uint8_t> bytes = {'G', 'G', 'U', 'X', 3, 0, 0, 0};
  CHECK(error_of(bytes).find("not a GGUF file") != std::string::npos);
  bytes = {'G', 'G', 'U', 'F', 1, 0, 0, 0};
  CHECK(error_of(bytes).find("version 1") != std::string::npos);
  bytes = {'G', 'G', 'U', 'F', 0, 0, 0, 3};
  CHECK(error_of(bytes).find("big-endian") != std::string::npos);
  bytes = {'G', 'G', 'U', 'F', 9, 0, 0, 0};
  CHECK(error_of(bytes).find("unknown GGUF version 9") != std::string::npos);
}

TEST_CASE("gguf: an unknown tensor type names the tensor") {
  GgufWriter w;
  w.add_tensor("blk.3.attn_q.weight", {32, 2}, 77);
  const std::string msg = error_of(with_data(w));
  CHECK(msg.find("tensor 'blk.3.attn_q.weight'") != std::string::npos);
  CHECK(msg.find("unknown ggml tensor type 77") != std::string::npos);
}

TEST_CASE("gguf: a row length that is not a whole number of blocks is refused") {
  GgufWriter w;
  w.add_tensor("x", {100, 2}, 12);  // q4_K needs multiples of 256
  const std::string msg = error_of(with_data(w));
  CHECK(msg.find("tensor 'x'") != std::string::npos);
  CHECK(msg.find("multiple of q4_K's block of 256") != std::string::npos);
}

TEST_CASE("gguf: huge counts, lengths and dims are refused before allocating") {
  // Header claiming 2^60 metadata entries.
  std::vector<uint8_t> bytes = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  const uint64_t n_tensors = 0, n_kv = uint64_t{1} << 60;
  bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(&n_tensors),
               reinterpret_cast<const uint8_t*>(&n_tensors) + 8);
  bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(&n_kv),
               reinterpret_cast<const uint8_t*>(&n_kv) + 8);
  CHECK(error_of(bytes).find("metadata count") != std::string::npos);

  // A string array claiming 2^40 elements.
  GgufWriter w;
  w.set_string_array("tokenizer.ggml.tokens", {"a"});
  std::vector<uint8_t> b = w.header_bytes();
  const std::string key = "tokenizer.ggml.tokens";
  auto at = std::search(b.begin(), b.end(), key.begin(), key.end()) - b.begin();
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(b.data() + at + key.size() + 4 + 4, &huge,
              8);  // after the value type and element type
  CHECK(error_of(b).find("metadata 'tokenizer.ggml.tokens'") != std::string::npos);

  GgufWriter dims;
  dims.add_tensor("big", {int64_t{1} << 31, int64_t{1} << 31, 4}, 0);
  CHECK(error_of(dims.header_bytes()).find("tensor 'big'") != std::string::npos);
}

TEST_CASE("gguf: duplicate keys and tensors, bad bools and alignments are refused") {
  {
    GgufWriter w;
    w.add_tensor("t", {32}, 0);
    w.add_tensor("t", {32}, 0);
    CHECK(error_of(with_data(w)).find("duplicate tensor name") != std::string::npos);
  }
  {
    GgufWriter w;
    w.set_bool("flag", true);
    std::vector<uint8_t> b = w.header_bytes();
    const std::string key = "flag";
    auto at = std::search(b.begin(), b.end(), key.begin(), key.end()) - b.begin();
    b[static_cast<size_t>(at) + key.size() + 4] = 7;
    CHECK(error_of(b).find("bool value 7") != std::string::npos);
  }
  {
    GgufWriter w(48);  // not a power of two
    CHECK(error_of(w.header_bytes()).find("general.alignment") != std::string::npos);
  }
  {
    // A duplicate key: the last key/value pair written twice by hand.
    GgufWriter w;
    w.set_u32("zz.dup", 1);
    std::vector<uint8_t> b = w.header_bytes();
    const std::string key = "zz.dup";
    const auto at = std::search(b.begin(), b.end(), key.begin(), key.end()) - b.begin() - 8;
    const std::vector<uint8_t> pair(b.begin() + at, b.begin() + at + 8 + 6 + 4 + 4);
    b.insert(b.begin() + at, pair.begin(), pair.end());
    uint64_t n_kv;
    std::memcpy(&n_kv, b.data() + 16, 8);
    ++n_kv;
    std::memcpy(b.data() + 16, &n_kv, 8);
    CHECK(error_of(b).find("metadata 'zz.dup': duplicate key") != std::string::npos);
  }
}

TEST_CASE("gguf: misaligned and overlapping tensor data is refused") {
  GgufWriter w;
  w.add_tensor("first", {64}, 0);
  w.add_tensor("second", {64}, 0);
  std::vector<uint8_t> b = with_data(w);
  // The second tensor info's offset is the last 8 bytes before the padding:
  // find "second" and patch its offset (after name, n_dims, 1 dim, type).
  const std::string key = "second";
  auto at = std::search(b.begin(), b.end(), key.begin(), key.end()) - b.begin();
  const size_t offset_at = static_cast<size_t>(at) + key.size() + 4 + 8 + 4;
  uint64_t off = 8;
  std::memcpy(b.data() + offset_at, &off, 8);
  CHECK(error_of(b).find("not a multiple of the 32-byte alignment") != std::string::npos);
  off = 128;  // overlaps "first" (256 bytes at 0)
  std::memcpy(b.data() + offset_at, &off, 8);
  CHECK(error_of(b).find("overlaps tensor 'first'") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::gguf
