// Quantization recipes: which weight format each tensor of a model gets
// when `dancemoe quantize --type NAME` writes a GGUF file. The mixtures
// follow llama.cpp's (llama-quant.cpp) so that files compare like for like:
//
//   q8_0, q4_0, q6_k, f16, bf16, f32   that format for every matrix
//   q4_k_s / q5_k_s   Q4_K / Q5_K everywhere
//   q4_k_m / q5_k_m   Q4_K / Q5_K, with Q6_K for the v projection and the
//                     down projections (dense and experts) of the layers
//                     "use_more_bits" picks (the first and last eighth of
//                     the layers and every third one between)
// For every quantized mixture the LM head gets Q6_K (Q8_0 for q8_0); with
// exactly 8 experts (Mixtral) k and v get Q8_0 and, for the K mixtures, the
// attention output Q5_K. Vectors (norms, biases) and routers stay f32. A
// matrix whose rows are not a whole number of the chosen format's blocks
// falls back to Q8_0, then to f16.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/model/model_config.h"
#include "kernels/kernels.h"

namespace dancemoe::gguf {

enum class Mixture : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ8_0,
  kQ4_0,
  kQ4_K_S,
  kQ4_K_M,
  kQ5_K_S,
  kQ5_K_M,
  kQ6_K,
};

// "q4_k_m", "Q4_K_M", ... ; invalid_argument listing the names otherwise.
Result<Mixture> parse_mixture(std::string_view name);
std::string_view mixture_name(Mixture mixture);
// llama.cpp's general.file_type value (LLAMA_FTYPE_*).
uint32_t mixture_file_type(Mixture mixture);

// The format of the tensor `role` of `layer` (ignored for global tensors)
// with rows of `cols` values.
kernels::WeightType recipe_type(Mixture mixture, const ModelConfig& config, TensorRole role,
                                int64_t layer, int64_t cols);

}  // namespace dancemoe::gguf
