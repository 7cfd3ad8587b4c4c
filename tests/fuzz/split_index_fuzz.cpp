// Fuzz target: a split checkpoint's index (dancemoe-split.json, read from a
// directory someone copied) must parse to a Status -- never crash or hang --
// whatever its bytes, against the tiny model's config.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/model/model_config.h"
#include "common/model/split/split_index.h"

namespace {

const dancemoe::ModelConfig& config() {
  static const dancemoe::ModelConfig c = [] {
    // The tiny preset's config.json: 4 layers, layer 1 dense, 8 experts.
    const std::string text =
        R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
      "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
      "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": false,
      "num_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": true,
      "decoder_sparse_step": 1, "mlp_only_layers": [1]})";
    auto parsed = dancemoe::parse_model_config(text, "config.json");
    if (!parsed.is_ok()) __builtin_trap();
    return *parsed;
  }();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto index = dancemoe::SplitIndex::parse(text, "fuzz/dancemoe-split.json", config());
  if (index.is_ok()) {
    // Whatever was accepted is consistent with the model.
    if (index->expert_layers.size() != 3) __builtin_trap();
    for (const auto& layer : index->expert_layers) {
      if (layer.digests.size() != 8 || layer.expert_bytes() == 0) __builtin_trap();
    }
  }
  return 0;
}
