// GGUF tensor names and layouts: the names llama.cpp gives each role, and
// the llama q/k row interleaving of its converter.
#include "common/model/gguf/gguf_tensor_names.h"

#include <doctest/doctest.h>

#include <vector>

namespace dancemoe::gguf {
namespace {

TEST_CASE(
    "gguf tensor names: llama q/k rows interleave each head's halves like llama.cpp's converter") {
  // convert_hf_to_gguf: w.reshape(n_head, 2, head_dim / 2, cols).swapaxes(1, 2)
  const int64_t head_dim = 8, n_heads = 2;
  std::vector<int64_t> gguf_of_hf(static_cast<size_t>(n_heads * head_dim));
  for (int64_t r = 0; r < n_heads * head_dim; ++r)
    gguf_of_hf[static_cast<size_t>(r)] = llama_qk_row(r, head_dim);
  // GGUF row order (h, i, j) lists HF rows h * 8 + j * 4 + i.
  const std::vector<int64_t> hf_at_gguf = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};
  for (int64_t g = 0; g < n_heads * head_dim; ++g) {
    CHECK(gguf_of_hf[static_cast<size_t>(hf_at_gguf[static_cast<size_t>(g)])] == g);
  }
}

TEST_CASE("gguf tensor names: names follow llama.cpp") {
  Result<ModelConfig> qwen = parse_model_config(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
    "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "rms_norm_eps": 1e-06, "num_experts": 8, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "intermediate_size": 96})",
                                                "config.json");
  REQUIRE_MESSAGE(qwen.is_ok(), qwen.status().to_string());
  const ModelConfig& c = *qwen;
  CHECK(gguf_tensor_name(c, TensorRole::kQ, 3) == "blk.3.attn_q.weight");
  CHECK(gguf_tensor_name(c, TensorRole::kPostAttentionNorm, 0) == "blk.0.ffn_norm.weight");
  CHECK(gguf_tensor_name(c, TensorRole::kExpertDown, 15) == "blk.15.ffn_down_exps.weight");
  CHECK(gguf_tensor_name(c, TensorRole::kRouter, 2) == "blk.2.ffn_gate_inp.weight");
  CHECK(gguf_tensor_name(c, TensorRole::kQNorm, 1) == "blk.1.attn_q_norm.weight");
  CHECK(gguf_tensor_name(c, TensorRole::kLmHead, 0) == "output.weight");
  CHECK(gguf_single_expert_name(TensorRole::kExpertUp, 1, 7) == "blk.1.ffn_up.7.weight");
}

}  // namespace
}  // namespace dancemoe::gguf
