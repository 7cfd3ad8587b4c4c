// Quantized activations (layout in kernels/quant_format.h): per group of 32
// or 256 values d = max|x| / 127 and q = round-to-nearest-even(x * (127 /
// max|x|)), plus the sum of q over each run of 16; for Q4_K / Q5_K q is
// stored in the interleaved order of quant_format.h. For Q8_0 the same with
// 32767 and 16-bit q over groups of 256, no sums. The SIMD levels compute the same products and
// roundings, so their output is bit-identical.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/scalar/scalar_ops.h"
#include "kernels/quant_format.h"

namespace dancemoe::kernels::scalar {
namespace {

// The 16-bit layout (Q8_0): groups of 256, the last one possibly shorter.
void quantize_x_wide(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out) {
  const int64_t group = quantized_x_group(type);
  const int64_t n_groups = (cols + group - 1) / group;
  const int64_t row_bytes = quantized_x_row_bytes(type, cols);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x + t * cols;
    auto* row = static_cast<uint8_t*>(out) + t * row_bytes;
    auto* q = reinterpret_cast<int16_t*>(row);
    auto* d = reinterpret_cast<float*>(row + 2 * cols);
    for (int64_t g = 0; g < n_groups; ++g) {
      const int64_t begin = g * group, end = std::min(cols, begin + group);
      float amax = 0.0f;
      for (int64_t i = begin; i < end; ++i) amax = std::fmax(amax, std::fabs(xt[i]));
      const float id = amax > 0.0f ? 32767.0f / amax : 0.0f;
      d[g] = amax / 32767.0f;
      for (int64_t i = begin; i < end; ++i) {
        // |x * id| <= 32767 up to rounding; clamp as vpackssdw saturates.
        const float v = std::fmin(std::fmax(std::nearbyint(xt[i] * id), -32768.0f), 32767.0f);
        q[i] = static_cast<int16_t>(v);
      }
    }
    const int64_t used = cols * 2 + n_groups * 4;
    std::memset(row + used, 0, static_cast<size_t>(row_bytes - used));
  }
}

}  // namespace

void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out) {
  if (wide_x(type)) return quantize_x_wide(type, x, n_tokens, cols, out);
  const int64_t group = quantized_x_group(type);
  const int64_t row_bytes = quantized_x_row_bytes(type, cols);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x + t * cols;
    auto* row = static_cast<uint8_t*>(out) + t * row_bytes;
    auto* q = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + cols);
    auto* sums = reinterpret_cast<int16_t*>(row + cols + cols / group * 4);
    for (int64_t g = 0; g < cols / group; ++g) {
      float amax = 0.0f;
      for (int64_t i = 0; i < group; ++i) amax = std::fmax(amax, std::fabs(xt[g * group + i]));
      const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
      d[g] = amax / 127.0f;
      for (int64_t i = 0; i < group; ++i) {
        q[q_offset(type, g * group + i)] =
            static_cast<int8_t>(std::nearbyint(xt[g * group + i] * id));
      }
    }
    for (int64_t s = 0; s < cols / 16; ++s) {  // runs of 16 in value order
      int sum = 0;
      for (int64_t i = 0; i < 16; ++i) sum += q[q_offset(type, s * 16 + i)];
      sums[s] = static_cast<int16_t>(sum);
    }
    const int64_t used = cols + cols / group * 4 + cols / 16 * 2;
    std::memset(row + used, 0, static_cast<size_t>(row_bytes - used));
  }
}

}  // namespace dancemoe::kernels::scalar
