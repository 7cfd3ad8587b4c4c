#include "common/model/gguf/gguf_recipe.h"

#include <cctype>

#include "kernels/quant_format.h"

namespace dancemoe::gguf {
namespace {

using kernels::WeightType;

struct MixtureInfo {
  Mixture mixture;
  std::string_view name;
  uint32_t file_type;
  WeightType base;
};

constexpr MixtureInfo kMixtures[] = {
    {Mixture::kF32, "f32", 0, WeightType::kF32},
    {Mixture::kF16, "f16", 1, WeightType::kF16},
    {Mixture::kBF16, "bf16", 32, WeightType::kBF16},
    {Mixture::kQ8_0, "q8_0", 7, WeightType::kQ8_0},
    {Mixture::kQ4_0, "q4_0", 2, WeightType::kQ4_0},
    {Mixture::kQ4_K_S, "q4_k_s", 14, WeightType::kQ4_K},
    {Mixture::kQ4_K_M, "q4_k_m", 15, WeightType::kQ4_K},
    {Mixture::kQ5_K_S, "q5_k_s", 16, WeightType::kQ5_K},
    {Mixture::kQ5_K_M, "q5_k_m", 17, WeightType::kQ5_K},
    {Mixture::kQ6_K, "q6_k", 18, WeightType::kQ6_K},
};

const MixtureInfo& info(Mixture m) {
  for (const MixtureInfo& i : kMixtures) {
    if (i.mixture == m) return i;
  }
  return kMixtures[0];
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and
// every third layer in between.
bool use_more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

bool fits(WeightType type, int64_t cols) { return cols % kernels::weight_block_values(type) == 0; }

}  // namespace

Result<Mixture> parse_mixture(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string names;
  for (const MixtureInfo& i : kMixtures) {
    if (lower == i.name) return i.mixture;
    names += (names.empty() ? "" : ", ") + std::string(i.name);
  }
  return invalid_argument("--type '" + std::string(name) + "': expected one of " + names);
}

std::string_view mixture_name(Mixture mixture) { return info(mixture).name; }

uint32_t mixture_file_type(Mixture mixture) { return info(mixture).file_type; }

WeightType recipe_type(Mixture mixture, const ModelConfig& config, TensorRole role, int64_t layer,
                       int64_t cols) {
  if (is_vector_role(role) || role == TensorRole::kRouter) return WeightType::kF32;
  const WeightType base = info(mixture).base;
  WeightType type = base;
  const bool quantized = kernels::is_block_format(base);
  const bool k_mix = base == WeightType::kQ4_K || base == WeightType::kQ5_K;
  const bool medium = mixture == Mixture::kQ4_K_M || mixture == Mixture::kQ5_K_M;
  const bool eight_experts = config.n_experts == 8;
  if (quantized) {
    switch (role) {
      case TensorRole::kLmHead:
        type = base == WeightType::kQ8_0 ? WeightType::kQ8_0 : WeightType::kQ6_K;
        break;
      case TensorRole::kEmbed:
        // A tied embedding is also the LM head.
        if (config.tie_word_embeddings && base != WeightType::kQ8_0) type = WeightType::kQ6_K;
        break;
      case TensorRole::kV:
        if (eight_experts) {
          type = WeightType::kQ8_0;
        } else if (medium && use_more_bits(layer, config.n_layers)) {
          type = WeightType::kQ6_K;
        }
        break;
      case TensorRole::kK:
        if (eight_experts) type = WeightType::kQ8_0;
        break;
      case TensorRole::kO:
        if (eight_experts && k_mix) type = WeightType::kQ5_K;
        break;
      case TensorRole::kExpertDown:
      case TensorRole::kDenseDown:
        if (medium && use_more_bits(layer, config.n_layers)) type = WeightType::kQ6_K;
        break;
      default:
        break;
    }
  }
  if (!fits(type, cols))
    type = fits(WeightType::kQ8_0, cols) && quantized ? WeightType::kQ8_0 : WeightType::kF16;
  return type;
}

}  // namespace dancemoe::gguf
