// Random-weight checkpoints in the real HuggingFace layout, for the demo,
// tests and benchmarks (no real weights can be downloaded here). The output
// directory holds config.json, generation_config.json, model.safetensors
// (or shards + model.safetensors.index.json) and, when a tokenizer is
// available, tokenizer.json + tokenizer_config.json.
//
// Deterministic for a seed: every tensor's values come from a counter-based
// generator keyed by (seed, tensor name) using only exact integer and IEEE
// arithmetic, so the same seed gives the same bytes on every machine and in
// any shard layout.
//
// The tensors are the ones the config's blocks need (required_tensors),
// under the family's published names. Init scales keep activations in a
// sane range and routing non-degenerate: embeddings ~unit variance,
// projections ~1/sqrt(fan_in), norm weights 1±0.1, biases small.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/tensor/dtype.h"

namespace dancemoe {

struct SyntheticModelSpec {
  std::string arch = "qwen3_moe";  // synthetic_architectures() (synthetic_configs.h)
  std::string preset = "tiny";     // "tiny", "small", "medium", "olmoe-shape"
  uint64_t seed = 1;
  DType dtype = DType::kBF16;
  int n_shards = 1;
  bool tie_word_embeddings = false;
  bool norm_topk_prob = true;  // qwen3_moe only
  // A tokenizer.json to copy (its tokenizer_config.json beside it too); when
  // absent, a synthetic byte-level BPE tokenizer is generated if the model's
  // vocabulary is large enough, else none is written.
  std::optional<std::filesystem::path> tokenizer_json;
  bool write_tokenizer = true;
  // config.json fields replaced after the preset's (make-model --set
  // KEY=JSON), e.g. {"sliding_window", "6"}; the tensors follow the result.
  std::vector<std::pair<std::string, std::string>> config_overrides;
};

// Writes the checkpoint, then its expert manifest (expert_manifest.h).
Status write_synthetic_model(const SyntheticModelSpec& spec, const std::filesystem::path& out_dir,
                             const LoadProgress& progress = {});

}  // namespace dancemoe
