#include "common/model/synthetic/synthetic_model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/base/file_util.h"
#include "common/model/checkpoint.h"
#include "common/model/published_mxfp4.h"
#include "common/model/safetensors_writer.h"
#include "common/model/synthetic/synthetic_configs.h"
#include "common/tokenizer/synthetic_tokenizer.h"
#include "common/tokenizer/tokenizer.h"
#include "kernels/cpu/mxfp4_block.h"
#include "kernels/cpu/numeric.h"
#include "kernels/quantize.h"

namespace dancemoe {
namespace {

using nlohmann::ordered_json;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// f32 -> IEEE half, round to nearest even (finite inputs in half range).
uint16_t float_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exponent <= 0) {  // subnormal or zero
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rem = mantissa & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

// How a tensor is initialised: uniform with this standard deviation around `center`.
struct Init {
  float center;
  float stddev;
};

// Value i of the stream `key`: uniform with init's standard deviation.
float synthetic_value(uint64_t key, uint64_t i, Init init) {
  const float half_width = init.stddev * std::sqrt(3.0f);
  const uint64_t r = splitmix64(key + i);
  const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // exact, [0, 1)
  return init.center + (2.0f * u - 1.0f) * half_width;
}

void fill_tensor(const TensorSpec& spec, Init init, uint64_t seed, std::span<uint8_t> out) {
  const uint64_t key = splitmix64(seed ^ fnv1a(spec.name));
  const uint64_t n = spec.n_elements();
  for (uint64_t i = 0; i < n; ++i) {
    const float value = synthetic_value(key, i, init);
    switch (spec.dtype) {
      case DType::kF32:
        std::memcpy(out.data() + 4 * i, &value, 4);
        break;
      case DType::kBF16: {
        const uint16_t h = kernels::float_to_bf16(value);
        std::memcpy(out.data() + 2 * i, &h, 2);
        break;
      }
      case DType::kF16: {
        const uint16_t h = float_to_f16(value);
        std::memcpy(out.data() + 2 * i, &h, 2);
        break;
      }
      case DType::kU8:  // stacked MXFP4 tensors are filled by fill_mxfp4
        break;
    }
  }
}

// gpt-oss's stacked MXFP4 tensors (ModelConfig::stacked_experts): the
// values of matrix `source` ([rows, cols], every expert's rows one after the
// other) quantized to MXFP4 row by row, written as published -- the blocks
// or the scales tensor (common/model/published_mxfp4.h). Both tensors of a
// matrix come from the same values.
struct Mxfp4Part {
  std::string source;  // names the values' stream
  int64_t cols = 0;
  bool scales = false;  // the scales tensor, else the blocks
};

void fill_mxfp4(const Mxfp4Part& part, Init init, uint64_t seed, std::span<uint8_t> out) {
  const uint64_t key = splitmix64(seed ^ fnv1a(part.source));
  const int64_t n_blocks = part.cols / kernels::kMxfp4Values;
  const int64_t published_row =
      part.scales ? n_blocks : n_blocks * static_cast<int64_t>(kPublishedMxfp4BlockBytes);
  const int64_t rows = static_cast<int64_t>(out.size()) / published_row;
  std::vector<float> values(static_cast<size_t>(part.cols));
  std::vector<uint8_t> blocks(static_cast<size_t>(n_blocks * kernels::kMxfp4BlockBytes));
  std::vector<uint8_t> codes(static_cast<size_t>(n_blocks * kPublishedMxfp4BlockBytes));
  std::vector<uint8_t> scales(static_cast<size_t>(n_blocks));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < part.cols; ++c) {
      values[static_cast<size_t>(c)] =
          synthetic_value(key, static_cast<uint64_t>(r * part.cols + c), init);
    }
    kernels::quantize_rows(kernels::WeightType::kMXFP4, values.data(), 1, part.cols, blocks.data());
    mxfp4_to_published(blocks.data(), n_blocks, codes.data(), scales.data());
    const std::vector<uint8_t>& src = part.scales ? scales : codes;
    std::memcpy(out.data() + r * published_row, src.data(), src.size());
  }
}

struct PlannedTensor {
  TensorSpec spec;
  Init init;
  std::optional<Mxfp4Part> mxfp4;
};

// The initial values of a tensor of `role` and `shape`.
Init init_for(TensorRole role, const std::vector<int64_t>& shape, bool tied, int64_t hidden) {
  const float inv_hidden = 1.0f / std::sqrt(static_cast<float>(hidden));
  switch (role) {
    case TensorRole::kEmbed:
      // Untied embeddings have unit variance (the residual stream starts at
      // the scale of a layer's output). Tied ones double as the LM head,
      // where unit variance would make every token predict itself (h . e_t
      // dominates), so they are scaled like a projection instead.
      return Init{0.0f, tied ? 2.0f * inv_hidden : 1.0f};
    case TensorRole::kFinalNorm:
    case TensorRole::kInputNorm:
    case TensorRole::kPostAttentionNorm:
    case TensorRole::kQNorm:
    case TensorRole::kKNorm:
    case TensorRole::kQANorm:
    case TensorRole::kKvANorm:
      return Init{1.0f, 0.06f};
    case TensorRole::kRouter:
      // A router twice as sharp as a plain 1/sqrt(fan_in) projection:
      // routing depends on the token rather than being near-uniform.
      return Init{0.0f, 2.0f * inv_hidden};
    case TensorRole::kSinks:
      return Init{0.0f, 1.0f};
    case TensorRole::kRouterBias:
      return Init{0.0f, 0.3f};
    case TensorRole::kRouterChoiceBias:
      // Large enough to change some choices of a sigmoid router.
      return Init{0.0f, 0.05f};
    default:
      if (is_vector_role(role)) return Init{0.0f, 0.05f};  // biases
      return Init{0.0f, 1.0f / std::sqrt(static_cast<float>(shape.back()))};
  }
}

// gpt-oss's stacked expert tensors of one layer, as published.
void plan_stacked_experts(const SyntheticModelSpec& s, const ModelConfig& c, int64_t layer,
                          std::vector<PlannedTensor>* out) {
  const StackedExpertNames& names = *c.stacked_experts;
  const int64_t e = c.n_experts, inter = c.moe_intermediate_size, hidden = c.hidden_size;
  const int64_t pb = kPublishedMxfp4BlockBytes;
  const auto name = [&](const std::string& pattern) {
    return tensor_name_from_pattern(pattern, layer);
  };
  // Weights ~ 1/sqrt(fan_in) as every projection; biases small.
  const Init gate_up{0.0f, 1.0f / std::sqrt(static_cast<float>(hidden))};
  const Init down{0.0f, 1.0f / std::sqrt(static_cast<float>(inter))};
  const Init bias{0.0f, 0.05f};
  const std::string gate_up_source = name(names.gate_up_blocks);
  const std::string down_source = name(names.down_blocks);
  out->push_back(
      {TensorSpec{name(names.gate_up_blocks), DType::kU8, {e, 2 * inter, hidden / 32, pb}}, gate_up,
       Mxfp4Part{gate_up_source, hidden, false}});
  out->push_back({TensorSpec{name(names.gate_up_scales), DType::kU8, {e, 2 * inter, hidden / 32}},
                  gate_up, Mxfp4Part{gate_up_source, hidden, true}});
  out->push_back({TensorSpec{name(names.gate_up_bias), s.dtype, {e, 2 * inter}}, bias, {}});
  out->push_back({TensorSpec{name(names.down_blocks), DType::kU8, {e, hidden, inter / 32, pb}},
                  down, Mxfp4Part{down_source, inter, false}});
  out->push_back({TensorSpec{name(names.down_scales), DType::kU8, {e, hidden, inter / 32}}, down,
                  Mxfp4Part{down_source, inter, true}});
  out->push_back({TensorSpec{name(names.down_bias), s.dtype, {e, hidden}}, bias, {}});
}

// Every tensor the config's blocks need, under its published name.
std::vector<PlannedTensor> plan_tensors(const SyntheticModelSpec& s, const ModelConfig& c) {
  std::vector<PlannedTensor> out;
  int64_t stacked_layer = -1;
  for (const RequiredTensor& req : required_tensors(c)) {
    if (c.stacked_experts && is_expert_role(req.role)) {
      if (req.layer != stacked_layer) plan_stacked_experts(s, c, req.layer, &out);
      stacked_layer = req.layer;
      continue;
    }
    std::vector<int64_t> shape = c.expected_shape(req.role);
    const Init init = init_for(req.role, shape, c.tie_word_embeddings, c.hidden_size);
    out.push_back(
        {TensorSpec{c.tensor_name(req.role, req.layer, req.expert), s.dtype, std::move(shape)},
         init,
         {}});
  }
  return out;
}

// The preset's config.json with the tokenizer's ids, the vocabulary it
// needs, and the --set overrides.
Result<ordered_json> config_json(const SyntheticModelSpec& s, int64_t min_vocab,
                                 const std::vector<int64_t>& eos, std::optional<int64_t> bos) {
  DMOE_ASSIGN_OR_RETURN(
      ordered_json c, synthetic_config(s.arch, s.preset, s.tie_word_embeddings, s.norm_topk_prob));
  c["vocab_size"] = std::max(c["vocab_size"].get<int64_t>(), min_vocab);
  for (const auto& [key, value] : s.config_overrides) {
    try {
      c[key] = ordered_json::parse(value);
    } catch (const ordered_json::exception&) {
      return invalid_argument("--set " + key + "=" + value + ": the value is not JSON");
    }
  }
  if (bos) c["bos_token_id"] = *bos;
  if (eos.size() == 1) c["eos_token_id"] = eos[0];
  if (eos.size() > 1) c["eos_token_id"] = eos;
  c["torch_dtype"] =
      s.dtype == DType::kF32 ? "float32" : (s.dtype == DType::kF16 ? "float16" : "bfloat16");
  c["dancemoe_synthetic"] = {{"preset", s.preset}, {"seed", s.seed}};
  return c;
}

Status copy_file_into(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    return unavailable("cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
  return Status::ok();
}

// Writes tokenizer.json + tokenizer_config.json: a copy of the given
// tokenizer (widening the model's vocabulary to cover it) or a synthetic
// byte-level BPE tokenizer of exactly the model's vocabulary size. Returns
// the end-of-sequence and beginning-of-sequence ids for config.json.
Status write_tokenizer_files(const SyntheticModelSpec& spec, const std::filesystem::path& out_dir,
                             int64_t preset_vocab, int64_t* min_vocab, std::vector<int64_t>* eos,
                             std::optional<int64_t>* bos) {
  if (spec.tokenizer_json) {
    const std::filesystem::path source = *spec.tokenizer_json;
    DMOE_RETURN_IF_ERROR(copy_file_into(source, out_dir / "tokenizer.json"));
    const std::filesystem::path config = source.parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config)) {
      DMOE_RETURN_IF_ERROR(copy_file_into(config, out_dir / "tokenizer_config.json"));
    }
  } else {
    DMOE_RETURN_IF_ERROR(
        tokenizer::write_synthetic_tokenizer(out_dir, static_cast<int32_t>(preset_vocab)));
  }
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                        tokenizer::Tokenizer::load(out_dir / "tokenizer.json"));
  // Round the embedding up to a multiple of 128 rows, as real checkpoints do.
  const int64_t needed = (static_cast<int64_t>(tok->vocab_size()) + 127) / 128 * 128;
  *min_vocab = needed;
  if (auto id = tok->eos_id()) eos->push_back(*id);
  if (auto id = tok->token_id("<|endoftext|>"); id && (eos->empty() || *id != (*eos)[0])) {
    eos->push_back(*id);
  }
  if (auto id = tok->bos_id()) *bos = *id;
  return Status::ok();
}

}  // namespace

Status write_synthetic_model(const SyntheticModelSpec& spec, const std::filesystem::path& out_dir,
                             const LoadProgress& progress) {
  // The preset's config first: an unknown --arch or --preset writes nothing.
  DMOE_ASSIGN_OR_RETURN(
      ordered_json preset,
      synthetic_config(spec.arch, spec.preset, spec.tie_word_embeddings, spec.norm_topk_prob));
  if (spec.n_shards < 1) return invalid_argument("--shards must be at least 1");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return unavailable(out_dir.string() + ": cannot create directory (" + ec.message() + ")");

  std::vector<int64_t> eos;
  std::optional<int64_t> bos;
  int64_t min_vocab = 0;
  if (spec.write_tokenizer) {
    DMOE_RETURN_IF_ERROR(write_tokenizer_files(spec, out_dir, preset["vocab_size"].get<int64_t>(),
                                               &min_vocab, &eos, &bos));
  }
  DMOE_ASSIGN_OR_RETURN(ordered_json config, config_json(spec, min_vocab, eos, bos));
  const std::string config_text = config.dump(2) + "\n";
  // The tensors follow from the config as the runtime reads it, so a --set
  // that changes the blocks changes the tensors with them.
  DMOE_ASSIGN_OR_RETURN(ModelConfig parsed,
                        parse_model_config(config_text, (out_dir / "config.json").string()));
  DMOE_RETURN_IF_ERROR(write_file(out_dir / "config.json", config_text));
  ordered_json generation = {{"do_sample", false}};
  if (bos) generation["bos_token_id"] = *bos;
  if (!eos.empty()) generation["eos_token_id"] = eos;
  DMOE_RETURN_IF_ERROR(write_file(out_dir / "generation_config.json", generation.dump(2) + "\n"));

  const std::vector<PlannedTensor> plan = plan_tensors(spec, parsed);
  uint64_t total = 0;
  for (const PlannedTensor& t : plan) total += t.spec.n_bytes();
  const uint64_t per_shard =
      (total + static_cast<uint64_t>(spec.n_shards) - 1) / static_cast<uint64_t>(spec.n_shards);
  // Contiguous runs of tensors, about equal in bytes.
  std::vector<std::vector<size_t>> shards(1);
  uint64_t in_shard = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (in_shard >= per_shard && static_cast<int>(shards.size()) < spec.n_shards) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(i);
    in_shard += plan[i].spec.n_bytes();
  }
  uint64_t done = 0;
  ordered_json weight_map = ordered_json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string file = "model.safetensors";
    if (shards.size() > 1) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
      file = name;
    }
    std::vector<TensorSpec> specs;
    for (size_t i : shards[s]) {
      specs.push_back(plan[i].spec);
      weight_map[plan[i].spec.name] = file;
    }
    auto fill = [&](size_t index, std::span<uint8_t> bytes) {
      const PlannedTensor& t = plan[shards[s][index]];
      if (t.mxfp4) {
        fill_mxfp4(*t.mxfp4, t.init, spec.seed, bytes);
      } else {
        fill_tensor(t.spec, t.init, spec.seed, bytes);
      }
      done += bytes.size();
      if (progress) progress(done, total);
    };
    DMOE_RETURN_IF_ERROR(write_safetensors(out_dir / file, specs, fill, {{"format", "pt"}}));
  }
  if (shards.size() > 1) {
    ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    DMOE_RETURN_IF_ERROR(
        write_file(out_dir / "model.safetensors.index.json", index.dump(2) + "\n"));
  }
  // The expert digests (expert_manifest.h), read back from the files just
  // written, so a generated model is verified like any with a manifest.
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> written, Checkpoint::open(out_dir));
  return ExpertManifest::write(*written).status();
}

}  // namespace dancemoe
