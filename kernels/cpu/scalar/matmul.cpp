// y[t, r] = sum_c x[t, c] * W[r, c]      x: [n_tokens, cols], W: [rows, cols]
// for r in [row_begin, row_end). Weights are widened to f32 one at a time;
// accumulation is f32 in column order. Block formats: each row dequantized
// exactly, then dotted (matmul_dequantized.h).
#include "kernels/cpu/matmul_dequantized.h"
#include "kernels/cpu/numeric.h"
#include "kernels/cpu/scalar/scalar_ops.h"
#include "kernels/interleave.h"

namespace dancemoe::kernels::scalar {
namespace {

float weight_at(const WeightView& w, int64_t r, int64_t c) {
  const int64_t idx = r * w.cols + c;
  switch (w.type) {
    case WeightType::kF32:
      return static_cast<const float*>(w.data)[idx];
    case WeightType::kF16:
      return f16_to_float(static_cast<const uint16_t*>(w.data)[idx]);
    case WeightType::kBF16:
      return bf16_to_float(static_cast<const uint16_t*>(w.data)[idx]);
    default:  // block formats go through matmul_dequantized
      return 0.0f;
  }
}

}  // namespace

void matmul_f32(const MatmulArgs& args, const float* x) {
  if (args.w.type == WeightType::kBF16 && args.w.layout == WeightLayout::kInterleaved16) {
    return matmul_deinterleaved<float>(args, x, matmul_f32);  // kernels/interleave.h
  }
  const WeightView& w = args.w;
  if (w.type != WeightType::kF32 && w.type != WeightType::kF16 && w.type != WeightType::kBF16) {
    return matmul_dequantized(args, x, dot);
  }
  for (int64_t t = 0; t < args.n_tokens; ++t) {
    const float* xt = x + t * w.cols;
    float* yt = args.y + t * args.y_stride;
    for (int64_t r = args.row_begin; r < args.row_end; ++r) {
      float acc = 0.0f;
      for (int64_t c = 0; c < w.cols; ++c) acc += weight_at(w, r, c) * xt[c];
      yt[r] = acc;
    }
  }
}

void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16) {
  // An interleaved copy (kernels/interleave.h) has no kernel of its own here.
  if (args.w.layout == WeightLayout::kInterleaved16) {
    return matmul_deinterleaved<uint16_t>(args, x_bf16, matmul_bf16);
  }
  const WeightView& w = args.w;
  const auto* wd = static_cast<const uint16_t*>(w.data);
  for (int64_t t = 0; t < args.n_tokens; ++t) {
    const uint16_t* xt = x_bf16 + t * w.cols;
    float* yt = args.y + t * args.y_stride;
    for (int64_t r = args.row_begin; r < args.row_end; ++r) {
      const uint16_t* wr = wd + r * w.cols;
      float acc = 0.0f;
      for (int64_t c = 0; c < w.cols; ++c) acc += bf16_to_float(wr[c]) * bf16_to_float(xt[c]);
      yt[r] = acc;
    }
  }
}

}  // namespace dancemoe::kernels::scalar
