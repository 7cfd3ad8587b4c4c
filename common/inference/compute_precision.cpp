#include "common/inference/compute_precision.h"

namespace dancemoe {

std::string_view precision_name(ComputePrecision precision) {
  return precision == ComputePrecision::kF32 ? "f32" : "bf16";
}

std::optional<ComputePrecision> parse_precision(std::string_view text) {
  if (text == "f32") return ComputePrecision::kF32;
  if (text == "bf16") return ComputePrecision::kBF16;
  return std::nullopt;
}

}  // namespace dancemoe
