// DeepSeek's kv_b in the split form newer llama.cpp converters write
// (attn_k_b + attn_v_b, gguf_kv_b.h): the converter's split reassembles to
// kv_b bit for bit in float formats and by value in block formats; a file in
// that form -- made here from a file of ours with kv_b whole, as the
// converter would split it -- loads as the same model (config, model id,
// kv_b bytes, logits equal), and a broken one names the key or tensor.
#include "common/model/gguf/gguf_kv_b.h"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"
#include "common/model/gguf/gguf_file.h"
#include "common/model/gguf/gguf_model.h"
#include "common/model/gguf/gguf_quantize.h"
#include "common/model/gguf/gguf_writer.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::gguf {
namespace {

using kernels::WeightType;
using testing::TempDir;

struct Shape {
  int64_t n_heads, nope, v_dim, rank;
  int64_t rows() const { return n_heads * (nope + v_dim); }
};

// The converter's split of kv_b [rows, rank] (values, f32):
// k_b[h][r][d] = kv_b[h (nope + v) + d][r], v_b[h][j][r] = kv_b[h (nope + v) + nope + j][r].
void split_values(const Shape& s, const std::vector<float>& kv_b, std::vector<float>* k_b,
                  std::vector<float>* v_b) {
  k_b->resize(static_cast<size_t>(s.n_heads * s.rank * s.nope));
  v_b->resize(static_cast<size_t>(s.n_heads * s.v_dim * s.rank));
  for (int64_t h = 0; h < s.n_heads; ++h) {
    const int64_t base = h * (s.nope + s.v_dim);
    for (int64_t d = 0; d < s.nope; ++d) {
      for (int64_t r = 0; r < s.rank; ++r) {
        (*k_b)[static_cast<size_t>((h * s.rank + r) * s.nope + d)] =
            kv_b[static_cast<size_t>((base + d) * s.rank + r)];
      }
    }
    for (int64_t j = 0; j < s.v_dim; ++j) {
      std::memcpy(v_b->data() + (h * s.v_dim + j) * s.rank,
                  kv_b.data() + (base + s.nope + j) * s.rank,
                  static_cast<size_t>(s.rank) * sizeof(float));
    }
  }
}

std::vector<uint8_t> encode(WeightType type, const std::vector<float>& values, int64_t cols) {
  const int64_t rows = static_cast<int64_t>(values.size()) / cols;
  std::vector<uint8_t> out(static_cast<size_t>(rows * kernels::weight_row_bytes(type, cols)));
  kernels::quantize_rows(type, values.data(), rows, cols, out.data());
  return out;
}

std::vector<float> decode(WeightType type, const uint8_t* bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  kernels::dequantize_values(type, bytes, n, out.data());
  return out;
}

TEST_CASE("gguf kv_b: the converter's split reassembles to kv_b, bit for bit in float formats") {
  const Shape s{3, 32, 16, 64};
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> kv_b(static_cast<size_t>(s.rows() * s.rank));
  for (float& x : kv_b) x = normal(rng);

  for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kF16}) {
    INFO(std::string(kernels::weight_type_name(type)));
    // The stored kv_b in this format, and the split of its values.
    const std::vector<uint8_t> whole = encode(type, kv_b, s.rank);
    std::vector<float> k_values, v_values;
    split_values(s, decode(type, whole.data(), s.rows() * s.rank), &k_values, &v_values);
    const std::vector<uint8_t> k_b = encode(type, k_values, s.nope);
    const std::vector<uint8_t> v_b = encode(type, v_values, s.rank);
    CHECK(assembled_kv_b_type(type, type) == type);
    std::vector<uint8_t> got(whole.size(), 0xee);
    assemble_kv_b({{type, k_b.data()}, {type, v_b.data()}, s.n_heads, s.nope, s.v_dim, s.rank},
                  got.data());
    CHECK(got == whole);
  }

  // Block formats (and mixed parts) give the f32 values of the stored parts.
  std::vector<float> k_values, v_values;
  split_values(s, kv_b, &k_values, &v_values);
  const std::vector<uint8_t> k_q8 = encode(WeightType::kQ8_0, k_values, s.nope);
  const std::vector<uint8_t> v_bf16 = encode(WeightType::kBF16, v_values, s.rank);
  CHECK(assembled_kv_b_type(WeightType::kQ8_0, WeightType::kBF16) == WeightType::kF32);
  CHECK(assembled_kv_b_type(WeightType::kF32, WeightType::kBF16) == WeightType::kF32);
  std::vector<float> got(kv_b.size());
  assemble_kv_b({{WeightType::kQ8_0, k_q8.data()},
                 {WeightType::kBF16, v_bf16.data()},
                 s.n_heads,
                 s.nope,
                 s.v_dim,
                 s.rank},
                reinterpret_cast<uint8_t*>(got.data()));
  std::vector<float> k_back, v_back, want;
  const std::vector<float> k_stored =
      decode(WeightType::kQ8_0, k_q8.data(), static_cast<int64_t>(k_values.size()));
  const std::vector<float> v_stored =
      decode(WeightType::kBF16, v_bf16.data(), static_cast<int64_t>(v_values.size()));
  // Undo the split on the stored values: split_values of `want` must give them back.
  want.resize(kv_b.size());
  for (int64_t h = 0; h < s.n_heads; ++h) {
    const int64_t base = h * (s.nope + s.v_dim);
    for (int64_t d = 0; d < s.nope; ++d) {
      for (int64_t r = 0; r < s.rank; ++r) {
        want[static_cast<size_t>((base + d) * s.rank + r)] =
            k_stored[static_cast<size_t>((h * s.rank + r) * s.nope + d)];
      }
    }
    for (int64_t j = 0; j < s.v_dim * s.rank; ++j) {
      want[static_cast<size_t>((base + s.nope) * s.rank + j)] =
          v_stored[static_cast<size_t>(h * s.v_dim * s.rank + j)];
    }
  }
  split_values(s, want, &k_back, &v_back);
  REQUIRE(k_back == k_stored);
  REQUIRE(v_back == v_stored);
  CHECK(got == want);
}

// Rewrites a DeepSeek GGUF of ours (kv_b whole) as newer converters write
// it: kv_b as attn_k_b / attn_v_b in `part_type`, the _mla keys, and the
// latent cache described as one shared head. `edit` may alter the result.
struct SplitEdits {
  bool drop_v_b_of_layer_1 = false;
  bool wrong_key_length = false;
  bool k_b_dims_swapped = false;
};

std::filesystem::path split_kv_b_file(const std::filesystem::path& src,
                                      const std::filesystem::path& dst, WeightType part_type,
                                      const SplitEdits& edits = {}) {
  std::ifstream in(src, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  Result<File> parsed = parse_gguf(std::span<const uint8_t>(bytes), src.string());
  REQUIRE_MESSAGE(parsed.is_ok(), parsed.status().to_string());
  const File& file = *parsed;
  auto integer = [&](const char* key) {
    const Value* v = file.find(key);
    REQUIRE_MESSAGE(v != nullptr, key);
    return v->integer;
  };
  const int64_t n_heads = integer("deepseek2.attention.head_count");
  const int64_t key_length = integer("deepseek2.attention.key_length");
  const int64_t value_length = integer("deepseek2.attention.value_length");
  const int64_t rank = integer("deepseek2.attention.kv_lora_rank");
  const int64_t rope = integer("deepseek2.rope.dimension_count");
  const Shape s{n_heads, key_length - rope, value_length, rank};

  GgufWriter writer(file.alignment);
  for (const auto& [key, value] : file.metadata) writer.set_value(key, value);
  writer.set_u32("deepseek2.attention.head_count_kv", 1);
  writer.set_u32("deepseek2.attention.key_length",
                 static_cast<uint32_t>(rank + rope + (edits.wrong_key_length ? 1 : 0)));
  writer.set_u32("deepseek2.attention.value_length", static_cast<uint32_t>(rank));
  writer.set_u32("deepseek2.attention.key_length_mla", static_cast<uint32_t>(key_length));
  writer.set_u32("deepseek2.attention.value_length_mla", static_cast<uint32_t>(value_length));

  // Each written tensor: its source tensor, or the encoded part.
  std::vector<const TensorInfo*> sources;
  std::vector<std::vector<uint8_t>> parts;
  for (const TensorInfo& t : file.tensors) {
    const std::string suffix = ".attn_kv_b.weight";
    if (t.name.size() < suffix.size() ||
        t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      writer.add_tensor(t.name, t.dims, t.type_id);
      sources.push_back(&t);
      parts.emplace_back();
      continue;
    }
    const std::string block = t.name.substr(0, t.name.size() - suffix.size());
    const std::optional<WeightType> type = runtime_type(t.type_id);
    REQUIRE(type.has_value());
    std::vector<float> k_values, v_values;
    split_values(s, decode(*type, bytes.data() + file.data_offset + t.offset, s.rows() * s.rank),
                 &k_values, &v_values);
    const std::vector<int64_t> k_dims = edits.k_b_dims_swapped
                                            ? std::vector<int64_t>{s.rank, s.nope, s.n_heads}
                                            : std::vector<int64_t>{s.nope, s.rank, s.n_heads};
    writer.add_tensor(block + ".attn_k_b.weight", k_dims, ggml_type_id(part_type));
    sources.push_back(nullptr);
    parts.push_back(encode(part_type, k_values, s.nope));
    if (edits.drop_v_b_of_layer_1 && block == "blk.1") continue;
    writer.add_tensor(block + ".attn_v_b.weight", {s.rank, s.v_dim, s.n_heads},
                      ggml_type_id(part_type));
    sources.push_back(nullptr);
    parts.push_back(encode(part_type, v_values, s.rank));
  }
  const Status written = writer.write(dst, [&](size_t i, std::vector<uint8_t>* out) {
    if (sources[i] == nullptr) {
      *out = parts[i];
    } else {
      const uint8_t* at = bytes.data() + file.data_offset + sources[i]->offset;
      out->assign(at, at + sources[i]->n_bytes);
    }
    return Status::ok();
  });
  REQUIRE_MESSAGE(written.is_ok(), written.to_string());
  return dst;
}

TEST_CASE("gguf kv_b: a DeepSeek file with kv_b split in attn_k_b / attn_v_b is the same model") {
  for (const char* arch : {"deepseek_v2", "deepseek_v3"}) {
    INFO(std::string(arch));
    TempDir dir("gguf-kv-b");
    SyntheticModelSpec spec;
    spec.arch = arch;
    testing::write_model(spec, dir.path() / "hf");
    Result<std::unique_ptr<Checkpoint>> hf = Checkpoint::open(dir.path() / "hf");
    REQUIRE(hf.is_ok());
    QuantizeOptions options;
    options.mixture = Mixture::kF32;
    const auto whole = dir.path() / "whole.gguf";
    REQUIRE(quantize_to_gguf(**hf, whole, options).is_ok());
    const auto split = split_kv_b_file(whole, dir.path() / "split.gguf", WeightType::kF32);

    auto ref = testing::open_model(whole, ComputePrecision::kF32);
    auto got = testing::open_model(split, ComputePrecision::kF32);
    const ModelConfig& a = ref->config();
    const ModelConfig& b = got->config();
    CHECK(b.n_kv_heads == a.n_heads);
    CHECK(b.head_dim == a.head_dim);
    CHECK(b.v_head_dim == a.v_head_dim);
    CHECK(b.kv_lora_rank == a.kv_lora_rank);
    CHECK(b.qk_nope_head_dim == a.qk_nope_head_dim);
    CHECK(got->checkpoint().model_id() == ref->checkpoint().model_id());

    // kv_b comes back as the whole file's bytes, and it is not used in place.
    const TensorLocation& kv_a = ref->checkpoint().tensor(TensorRole::kKvB, 1);
    const TensorLocation& kv_b = got->checkpoint().tensor(TensorRole::kKvB, 1);
    CHECK(kv_b.type == WeightType::kF32);
    CHECK_FALSE(kv_b.usable_in_place());
    REQUIRE(kv_b.n_bytes == kv_a.n_bytes);
    std::vector<uint8_t> x(kv_a.n_bytes), y(kv_b.n_bytes);
    REQUIRE(ref->checkpoint().read_tensor(kv_a, x.data()).is_ok());
    REQUIRE(got->checkpoint().read_tensor(kv_b, y.data()).is_ok());
    CHECK(x == y);

    const std::vector<int32_t> ids = {5, 17, 3, 42, 8, 1, 29};
    CHECK(testing::max_abs_diff(testing::all_logits(*ref, ids), testing::all_logits(*got, ids)) ==
          0.0f);

    // bf16 parts: a bf16 kv_b holding the same values rounded.
    const auto bf16 = split_kv_b_file(whole, dir.path() / "bf16.gguf", WeightType::kBF16);
    Result<std::unique_ptr<GgufModel>> m = GgufModel::open(bf16);
    REQUIRE_MESSAGE(m.is_ok(), m.status().to_string());
    CHECK((*m)->tensor(TensorRole::kKvB, 0).type == WeightType::kBF16);
  }
}

TEST_CASE("gguf kv_b: a broken split file names the key or tensor") {
  TempDir dir("gguf-kv-b-bad");
  SyntheticModelSpec spec;
  spec.arch = "deepseek_v2";
  testing::write_model(spec, dir.path() / "hf");
  Result<std::unique_ptr<Checkpoint>> hf = Checkpoint::open(dir.path() / "hf");
  REQUIRE(hf.is_ok());
  const auto whole = dir.path() / "whole.gguf";
  REQUIRE(quantize_to_gguf(**hf, whole, QuantizeOptions{}).is_ok());
  auto error = [&](const SplitEdits& edits) {
    const auto path = split_kv_b_file(whole, dir.path() / "bad.gguf", WeightType::kF32, edits);
    Result<std::unique_ptr<GgufModel>> m = GgufModel::open(path);
    REQUIRE_FALSE(m.is_ok());
    CHECK(m.status().message().find(path.string()) != std::string::npos);
    return m.status().message();
  };
  SplitEdits missing;
  missing.drop_v_b_of_layer_1 = true;
  CHECK(error(missing).find("tensor 'blk.1.attn_kv_b.weight' required by the metadata "
                            "(DeepseekV2ForCausalLM) is missing, and so is "
                            "'blk.1.attn_v_b.weight' of its split form") != std::string::npos);
  SplitEdits swapped;
  swapped.k_b_dims_swapped = true;
  CHECK(error(swapped).find("tensor 'blk.0.attn_k_b.weight' has dims") != std::string::npos);
  SplitEdits key;
  key.wrong_key_length = true;
  CHECK(error(key).find("metadata 'deepseek2.attention.key_length': expected kv_lora_rank + "
                        "rope.dimension_count") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::gguf
