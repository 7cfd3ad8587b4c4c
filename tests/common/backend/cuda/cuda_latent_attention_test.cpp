// The CUDA backend's host-side arithmetic for latent attention (MLA), which
// needs no device and runs in every CUDA build: which shapes the kernels
// take (a refusal names the limit), the dense part on the device holds
// exactly the tensors each family's blocks read (MLA: no k / v, q_a / q_b
// or q, kv_a, kv_b, an o_proj of attention_out_dim columns), and the device
// KV cache keeps one compressed row per position for MLA.
#include "common/backend/cuda/cuda_latent_attention.h"

#include <doctest/doctest.h>

#include "common/backend/cuda/cuda_forward.h"
#include "common/backend/cuda/device_weights.h"
#include "common/model/synthetic/synthetic_configs.h"

namespace dancemoe::testing {
namespace {

ModelConfig config_of(const std::string& arch, const std::string& preset) {
  Result<nlohmann::ordered_json> json = synthetic_config(arch, preset, false, true);
  REQUIRE_MESSAGE(json.is_ok(), json.status().to_string());
  Result<ModelConfig> c = parse_model_config(json->dump(), "config.json");
  REQUIRE_MESSAGE(c.is_ok(), c.status().to_string());
  return *c;
}

uint64_t aligned(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

TEST_CASE("cuda latent attention: DeepSeek's shapes run, larger latents are refused by name") {
  for (const char* arch : {"deepseek_v2", "deepseek_v3"}) {
    for (const char* preset : {"tiny", "small", "medium"}) {
      CAPTURE(arch);
      CAPTURE(preset);
      CHECK(backend::cuda::latent_attention_unsupported(config_of(arch, preset)).empty());
    }
  }
  ModelConfig real = config_of("deepseek_v3", "tiny");  // DeepSeek-V3's published head
  real.kv_lora_rank = 512;
  real.qk_nope_head_dim = 128;
  real.rotary_dim = 64;
  real.head_dim = 192;
  real.v_head_dim = 128;
  CHECK(backend::cuda::latent_attention_unsupported(real).empty());

  ModelConfig wide = real;
  wide.kv_lora_rank = 2048;
  const std::string why = backend::cuda::latent_attention_unsupported(wide);
  CHECK(why.find("multi-head latent attention (MLA)") != std::string::npos);
  CHECK(why.find("kv_lora_rank 2048") != std::string::npos);
  CHECK(why.find("at most 1024") != std::string::npos);

  ModelConfig tall = real;
  tall.qk_nope_head_dim = 256;
  tall.head_dim = 320;
  CHECK(backend::cuda::latent_attention_unsupported(tall).find("qk_rope_head_dim 320") !=
        std::string::npos);

  CHECK(backend::cuda::latent_attention_unsupported(config_of("qwen3_moe", "tiny")).empty());
}

// What lay_out_layer must add up to: every dense tensor the config's blocks
// read (required_tensors), 256-byte aligned, plus a one-group pointer table
// per dense MLP layer and per MoE layer with a shared expert.
uint64_t required_dense_bytes(const ModelConfig& c) {
  uint64_t total = 0;
  for (const RequiredTensor& t : required_tensors(c)) {
    if (is_expert_role(t.role)) continue;
    const std::vector<int64_t> shape = c.expected_shape(t.role);
    REQUIRE(shape.size() == (is_vector_role(t.role) ? 1u : 2u));
    total += is_vector_role(t.role) ? aligned(static_cast<uint64_t>(shape[0]) * sizeof(float))
                                    : aligned(static_cast<uint64_t>(shape[0] * shape[1]) * 2);
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const bool moe = c.layer_is_moe[static_cast<size_t>(l)];
    if (!moe || c.shared_intermediate_size > 0) total += aligned(3 * sizeof(void*));
  }
  return total;
}

TEST_CASE("cuda device weights: the dense part holds exactly the tensors each family reads") {
  for (const std::string& arch : synthetic_architectures()) {
    for (const char* preset : {"tiny", "small"}) {
      CAPTURE(arch);
      CAPTURE(preset);
      const ModelConfig c = config_of(arch, preset);
      CHECK(backend::cuda::DeviceWeights::dense_bytes(c) == required_dense_bytes(c));
    }
  }
}

TEST_CASE("cuda forward: the device KV cache keeps one compressed row per position for MLA") {
  const ModelConfig mla = config_of("deepseek_v3", "tiny");
  const uint64_t row = static_cast<uint64_t>(mla.kv_lora_rank + mla.rope_dim());
  CHECK(backend::cuda::CudaForward::kv_cache_bytes(mla, 100) ==
        static_cast<uint64_t>(mla.n_layers) * 100 * row * sizeof(float));
  const ModelConfig grouped = config_of("qwen3_moe", "tiny");
  CHECK(backend::cuda::CudaForward::kv_cache_bytes(grouped, 100) ==
        static_cast<uint64_t>(grouped.n_layers) * 100 * 2 *
            static_cast<uint64_t>(grouped.kv_dim()) * sizeof(float));
}

}  // namespace
}  // namespace dancemoe::testing
