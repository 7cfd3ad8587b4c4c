// How activations enter matrix products on the CPU. Weights always stay in
// their stored dtype and accumulation is always f32.
#pragma once

#include <optional>
#include <string_view>

namespace dancemoe {

enum class ComputePrecision {
  // Activations stay f32 (weights widened in registers): the reference mode,
  // within ~1e-5 of an f32 PyTorch forward. Used by the golden tests.
  kF32,
  // Activations are rounded to bf16 before each bf16-weight product so the
  // CPU's bf16 dot-product instructions can be used: ~2x the compute rate on
  // prefill, and the default. Logits differ from kF32 by ~1e-2.
  kBF16,
};

std::string_view precision_name(ComputePrecision precision);
std::optional<ComputePrecision> parse_precision(std::string_view text);

}  // namespace dancemoe
