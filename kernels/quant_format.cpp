#include "kernels/quant_format.h"

#include <cctype>

namespace dancemoe::kernels {
namespace {

struct FormatInfo {
  std::string_view name;
  int64_t block_values;
  int64_t block_bytes;
};

// Indexed by WeightType.
constexpr FormatInfo kFormats[kWeightTypeCount] = {
    {"f32", 1, 4},      {"f16", 1, 2},      {"bf16", 1, 2},     {"q8_0", 32, 34},  {"q4_0", 32, 18},
    {"q4_K", 256, 144}, {"q5_K", 256, 176}, {"q6_K", 256, 210}, {"mxfp4", 32, 17},
};

const FormatInfo& info(WeightType type) { return kFormats[static_cast<int>(type)]; }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

}  // namespace

bool is_block_format(WeightType type) { return info(type).block_values > 1; }

int64_t weight_block_values(WeightType type) { return info(type).block_values; }

int64_t weight_block_bytes(WeightType type) { return info(type).block_bytes; }

int64_t weight_row_bytes(WeightType type, int64_t cols) {
  return cols / info(type).block_values * info(type).block_bytes;
}

std::string_view weight_type_name(WeightType type) { return info(type).name; }

bool parse_weight_type(std::string_view text, WeightType* type) {
  for (int i = 0; i < kWeightTypeCount; ++i) {
    if (equal_ignoring_case(text, kFormats[i].name)) {
      *type = static_cast<WeightType>(i);
      return true;
    }
  }
  return false;
}

int64_t quantized_x_group(WeightType type) {
  return weight_block_values(type) == 32 && !wide_x(type) ? 32 : 256;
}

int64_t quantized_x_row_bytes(WeightType type, int64_t cols) {
  const int64_t group = quantized_x_group(type);
  if (wide_x(type)) {
    return align64(cols * static_cast<int64_t>(sizeof(int16_t)) +
                   (cols + group - 1) / group * static_cast<int64_t>(sizeof(float)));
  }
  return align64(cols + cols / group * static_cast<int64_t>(sizeof(float)) +
                 cols / 16 * static_cast<int64_t>(sizeof(int16_t)));
}

QuantizedXRow quantized_x_row(WeightType type, const void* x_q, int64_t cols, int64_t token) {
  const auto* row = static_cast<const uint8_t*>(x_q) + token * quantized_x_row_bytes(type, cols);
  const int64_t group = quantized_x_group(type);
  QuantizedXRow r;
  if (wide_x(type)) {
    r.q16 = reinterpret_cast<const int16_t*>(row);
    r.d = reinterpret_cast<const float*>(row + 2 * cols);
    return r;
  }
  r.q = reinterpret_cast<const int8_t*>(row);
  r.d = reinterpret_cast<const float*>(row + cols);
  r.sums = reinterpret_cast<const int16_t*>(row + cols + cols / group * 4);
  return r;
}

}  // namespace dancemoe::kernels
