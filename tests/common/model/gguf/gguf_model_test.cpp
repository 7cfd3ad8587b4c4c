// GgufModel on files written by quantize_to_gguf from the tiny synthetic
// checkpoints (Qwen3-MoE with a dense layer, Mixtral): the config, the
// tokenizer and every tensor slice come back -- experts as slabs of the
// merged tensors, Mixtral's q/k flagged as interleaved -- a split set and a
// directory load like the single file, and bad files (a tensor missing, a
// shape that disagrees with the metadata, a type the runtime does not
// compute, a malformed manifest identity, a truncated file) are errors naming
// the file and the tensor or key.
#include "common/model/gguf/gguf_model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/base/sha256.h"
#include "common/model/checkpoint.h"
#include "common/model/gguf/gguf_quantize.h"
#include "common/model/gguf/gguf_tensor_names.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::gguf {
namespace {

using testing::TempDir;

std::unique_ptr<Checkpoint> tiny(const TempDir& dir, const std::string& arch) {
  SyntheticModelSpec spec;
  spec.arch = arch;
  testing::write_model(spec, dir.path() / "hf");
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(dir.path() / "hf");
  REQUIRE_MESSAGE(ckpt.is_ok(), ckpt.status().to_string());
  return std::move(ckpt).value();
}

std::filesystem::path quantize(const Checkpoint& ckpt, const std::filesystem::path& out,
                               Mixture mixture) {
  QuantizeOptions options;
  options.mixture = mixture;
  Result<QuantizeSummary> s = quantize_to_gguf(ckpt, out, options);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
  return out;
}

std::vector<float> hf_values(const Checkpoint& ckpt, const TensorLocation& loc) {
  std::vector<uint8_t> bytes(loc.n_bytes);
  REQUIRE(ckpt.read_tensor(loc, bytes.data()).is_ok());
  int64_t n = 1;
  for (int64_t d : loc.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  kernels::dequantize_values(loc.type, bytes.data(), n, out.data());
  return out;
}

std::vector<float> gguf_values(const GgufModel& m, const TensorSlice& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  kernels::dequantize_values(s.type, m.data(s), n, out.data());
  if (s.interleaved_qk) {  // back to HF row order
    const int64_t cols = s.shape.size() == 2 ? s.shape[1] : 1;
    std::vector<float> hf(out.size());
    for (int64_t r = 0; r < s.shape[0]; ++r) {
      std::copy_n(out.begin() + llama_qk_row(r, m.config().head_dim) * cols, cols,
                  hf.begin() + r * cols);
    }
    out.swap(hf);
  }
  return out;
}

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    ref += want[i] * want[i];
  }
  return std::sqrt(err / ref);
}

void check_matches_checkpoint(const GgufModel& m, const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config();
  CHECK(m.config().hf_architecture == c.hf_architecture);
  CHECK(m.config().layer_is_moe == c.layer_is_moe);
  CHECK(m.config().n_experts == c.n_experts);
  CHECK(m.config().tie_word_embeddings == c.tie_word_embeddings);
  CHECK(m.config().norm_topk_prob == c.norm_topk_prob);
  CHECK(m.config().eos_token_ids == c.eos_token_ids);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (TensorRole role : {TensorRole::kQ, TensorRole::kK, TensorRole::kInputNorm}) {
      INFO("layer ", l, " role ", static_cast<int>(role));
      CHECK(relative_error(gguf_values(m, m.tensor(role, l)),
                           hf_values(ckpt, ckpt.tensor(role, l))) < 0.01);
    }
    if (!c.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e : {int64_t{0}, c.n_experts - 1}) {
      INFO("layer ", l, " expert ", e);
      const TensorSlice& down = m.tensor(TensorRole::kExpertDown, l, e);
      CHECK(down.shape == c.expected_shape(TensorRole::kExpertDown));
      CHECK(relative_error(gguf_values(m, down),
                           hf_values(ckpt, ckpt.tensor(TensorRole::kExpertDown, l, e))) < 0.01);
    }
  }
}

TEST_CASE("gguf model: a Qwen3-MoE file reads back as the checkpoint it was written from") {
  TempDir dir("gguf-model");
  const auto ckpt = tiny(dir, "qwen3_moe");
  REQUIRE(std::count(ckpt->config().layer_is_moe.begin(), ckpt->config().layer_is_moe.end(),
                     false) > 0);
  const auto path = quantize(*ckpt, dir.path() / "tiny-q8_0.gguf", Mixture::kQ8_0);
  Result<std::unique_ptr<GgufModel>> m = GgufModel::open(path);
  REQUIRE_MESSAGE(m.is_ok(), m.status().to_string());
  check_matches_checkpoint(**m, *ckpt);
  CHECK((*m)->tensor(TensorRole::kQ, 0).type == kernels::WeightType::kQ8_0);
  CHECK((*m)->tensor(TensorRole::kInputNorm, 0).type == kernels::WeightType::kF32);
  CHECK_FALSE((*m)->tensor(TensorRole::kQ, 0).interleaved_qk);
  CHECK((*m)->tokenizer().has_value());
  CHECK((*m)->file_bytes() == std::filesystem::file_size(path));
  // The source's manifest, by identity (it keeps the model id).
  REQUIRE(ckpt->manifest_identity().has_value());
  CHECK((*m)->manifest_identity() == ckpt->manifest_identity());
  // A directory holding the file opens the same model.
  Result<std::unique_ptr<GgufModel>> from_dir = GgufModel::open(dir.path());
  REQUIRE_MESSAGE(from_dir.is_ok(), from_dir.status().to_string());
  CHECK((*from_dir)->config_json() == (*m)->config_json());
  CHECK(is_gguf_path(path));
  CHECK(is_gguf_path(dir.path()));
  CHECK_FALSE(is_gguf_path(dir.path() / "hf"));
}

TEST_CASE("gguf model: Mixtral's q and k rows are interleaved in the file and read back") {
  TempDir dir("gguf-mixtral");
  const auto ckpt = tiny(dir, "mixtral");
  const auto path = quantize(*ckpt, dir.path() / "tiny.gguf", Mixture::kQ8_0);
  Result<std::unique_ptr<GgufModel>> m = GgufModel::open(path);
  REQUIRE_MESSAGE(m.is_ok(), m.status().to_string());
  CHECK((*m)->tensor(TensorRole::kQ, 0).interleaved_qk);
  CHECK_FALSE((*m)->tensor(TensorRole::kV, 0).interleaved_qk);
  check_matches_checkpoint(**m, *ckpt);
}

// Rewrites a GGUF file as a split set of `n` parts, tensors in order.
std::vector<std::filesystem::path> split(const std::filesystem::path& single, int n,
                                         const std::filesystem::path& dir) {
  Result<MappedFile> map = MappedFile::open(single);
  REQUIRE(map.is_ok());
  Result<File> f = parse_gguf(map->bytes(), single.string());
  REQUIRE(f.is_ok());
  std::vector<std::filesystem::path> parts;
  const size_t per = (f->tensors.size() + n - 1) / n;
  for (int p = 0; p < n; ++p) {
    GgufWriter w;
    if (p == 0) {
      for (const auto& [key, value] : f->metadata) {
        if (key == "general.alignment") continue;
        if (value.type == ValueType::kString) w.set_string(key, value.text);
        if (value.type == ValueType::kU32) w.set_u32(key, static_cast<uint32_t>(value.integer));
        if (value.type == ValueType::kF32) w.set_f32(key, static_cast<float>(value.real));
        if (value.type == ValueType::kBool) w.set_bool(key, value.integer != 0);
        if (value.type == ValueType::kArray && value.array_type == ValueType::kString) {
          w.set_string_array(key, value.strings);
        }
        if (value.type == ValueType::kArray && value.array_type == ValueType::kI32) {
          w.set_i32_array(key, std::vector<int32_t>(value.integers.begin(), value.integers.end()));
        }
      }
      w.set_i32("split.tensors.count", static_cast<int32_t>(f->tensors.size()));
    }
    w.set_u32("split.no", static_cast<uint32_t>(p));
    w.set_u32("split.count", static_cast<uint32_t>(n));
    std::vector<const TensorInfo*> mine;
    for (size_t t = p * per; t < std::min(f->tensors.size(), (p + 1) * per); ++t) {
      mine.push_back(&f->tensors[t]);
      w.add_tensor(f->tensors[t].name, f->tensors[t].dims, f->tensors[t].type_id);
    }
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.gguf", p + 1, n);
    parts.push_back(dir / name);
    const Status s = w.write(parts.back(), [&](size_t i, std::vector<uint8_t>* bytes) {
      const uint8_t* src = map->data() + f->data_offset + mine[i]->offset;
      bytes->assign(src, src + mine[i]->n_bytes);
      return Status::ok();
    });
    REQUIRE(s.is_ok());
  }
  return parts;
}

TEST_CASE(
    "gguf model: a split set loads from any part or its directory, and a missing part is named") {
  TempDir dir("gguf-split");
  const auto ckpt = tiny(dir, "qwen3_moe");
  const auto single = quantize(*ckpt, dir.path() / "single.gguf", Mixture::kQ8_0);
  std::filesystem::create_directory(dir.path() / "parts");
  const auto parts = split(single, 3, dir.path() / "parts");
  for (const auto& path : {parts[0], parts[2], dir.path() / "parts"}) {
    INFO(path);
    Result<std::unique_ptr<GgufModel>> m = GgufModel::open(path);
    REQUIRE_MESSAGE(m.is_ok(), m.status().to_string());
    CHECK((*m)->files().size() == 3);
    check_matches_checkpoint(**m, *ckpt);
  }
  std::filesystem::remove(parts[1]);
  Result<std::unique_ptr<GgufModel>> m = GgufModel::open(parts[0]);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().message().find("model-00002-of-00003.gguf: part 2 of the split GGUF") !=
        std::string::npos);
}

// A copy of `src` with one header byte sequence replaced (same length).
std::filesystem::path patched(const std::filesystem::path& src, const std::filesystem::path& dst,
                              const std::string& from, const std::string& to) {
  std::ifstream in(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, from.size(), to);
  std::ofstream(dst, std::ios::binary) << bytes;
  return dst;
}

TEST_CASE("gguf model: bad files are errors naming the file and the tensor or key") {
  TempDir dir("gguf-bad");
  const auto ckpt = tiny(dir, "qwen3_moe");
  const auto good = quantize(*ckpt, dir.path() / "good.gguf", Mixture::kQ8_0);
  auto error = [](const std::filesystem::path& p) {
    Result<std::unique_ptr<GgufModel>> m = GgufModel::open(p);
    REQUIRE_FALSE(m.is_ok());
    CHECK(m.status().message().find(p.string()) != std::string::npos);
    return m.status().message();
  };
  // A required tensor renamed away.
  CHECK(error(patched(good, dir.path() / "missing.gguf", "blk.1.attn_v.weight",
                      "blk.1.attn_w.weight"))
            .find("tensor 'blk.1.attn_v.weight' required by the metadata") != std::string::npos);
  // Without its KV head count the metadata implies k/v shapes the tensors lack.
  {
    const std::string msg =
        error(patched(good, dir.path() / "shape.gguf", "qwen3moe.attention.head_count_kv",
                      "qwen3moe.attention.head_count_kX"));
    CHECK(msg.find("tensor 'blk.0.attn_k.weight' has dims") != std::string::npos);
    CHECK(msg.find("but the metadata implies") != std::string::npos);
  }
  // A tensor type the runtime does not compute with (q4_1: smaller, so the
  // file stays consistent).
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string name = "blk.0.attn_q.weight";
    const size_t at = bytes.find(name) + name.size() + 4 + 2 * 8;  // n_dims, 2 dims
    const uint32_t q4_1 = 3;
    std::memcpy(bytes.data() + at, &q4_1, 4);
    const auto path = dir.path() / "type.gguf";
    std::ofstream(path, std::ios::binary) << bytes;
    CHECK(error(path).find("tensor 'blk.0.attn_q.weight' has type q4_1, which the runtime does "
                           "not compute with") != std::string::npos);
  }
  // An unsupported architecture.
  CHECK(error(patched(good, dir.path() / "arch.gguf", "qwen3moe", "qwen9moe"))
            .find("metadata 'general.architecture': 'qwen9moe' is not supported") !=
        std::string::npos);
  // A manifest identity that is not a digest.
  {
    const std::string hex = to_hex(*ckpt->manifest_identity());
    CHECK(error(patched(good, dir.path() / "identity.gguf", hex, "X" + hex.substr(1)))
              .find("metadata 'dancemoe.manifest_identity': expected a string of 64") !=
          std::string::npos);
  }
  // Truncated.
  {
    const auto cut = dir.path() / "cut.gguf";
    std::filesystem::copy_file(good, cut);
    std::filesystem::resize_file(cut, std::filesystem::file_size(good) - 100);
    CHECK(error(cut).find("truncated") != std::string::npos);
  }
}

TEST_CASE("gguf model: the new families' files name a missing tensor and a bad gating key") {
  TempDir dir("gguf-bad-family");
  const auto ckpt = tiny(dir, "deepseek_v3");
  const auto good = quantize(*ckpt, dir.path() / "good.gguf", Mixture::kQ8_0);
  auto error = [](const std::filesystem::path& p) {
    Result<std::unique_ptr<GgufModel>> m = GgufModel::open(p);
    REQUIRE_FALSE(m.is_ok());
    return m.status().message();
  };
  REQUIRE(GgufModel::open(good).is_ok());
  // DeepSeek-V3's choice bias (e_score_correction_bias) and latent attention.
  for (const char* name : {"blk.1.exp_probs_b.bias", "blk.2.attn_kv_a_mqa.weight",
                           "blk.0.attn_q_a_norm.weight", "blk.3.ffn_up_shexp.weight"}) {
    std::string renamed = name;
    renamed[6] = 'X';
    CHECK(error(patched(good, dir.path() / "missing.gguf", name, renamed))
              .find("tensor '" + std::string(name) + "' required by the metadata") !=
          std::string::npos);
  }
  // expert_gating_func 7: neither softmax nor sigmoid.
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "deepseek2.expert_gating_func";
    const size_t at = bytes.find(key) + key.size() + 4;  // the value type, then the value
    const uint32_t seven = 7;
    std::memcpy(bytes.data() + at, &seven, 4);
    const auto path = dir.path() / "gating.gguf";
    std::ofstream(path, std::ios::binary) << bytes;
    CHECK(error(path).find("metadata 'deepseek2.expert_gating_func': 7 is not supported "
                           "(supported: 1 = softmax (V2), 2 = sigmoid (V3))") != std::string::npos);
  }
  // An _mla key (the split attn_k_b / attn_v_b form, gguf_kv_b_test.cpp)
  // with key_length still a query head's: the key names what it expected.
  CHECK(error(patched(good, dir.path() / "mla.gguf", "deepseek2.expert_feed_forward_length",
                      "deepseek2.attention.value_length_mla"))
            .find("metadata 'deepseek2.attention.key_length': expected kv_lora_rank + "
                  "rope.dimension_count") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::gguf
