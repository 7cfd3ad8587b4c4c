#include "common/tensor/dtype.h"

namespace dancemoe {

size_t dtype_size_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kU8:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kU8:
      return "U8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "U8") return DType::kU8;
  return std::nullopt;
}

kernels::WeightType to_weight_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return kernels::WeightType::kF32;
    case DType::kF16:
      return kernels::WeightType::kF16;
    case DType::kBF16:
      return kernels::WeightType::kBF16;
    case DType::kU8:
      break;
  }
  return kernels::WeightType::kF32;
}

}  // namespace dancemoe
