// y[t, r] = sum_c x[t, c] W[r, c] for a block-format W and quantized x
// (kernels/quant_format.h), the reference every level is checked against.
//   W: [rows, cols] in blocks (cpu/quant_blocks.h), x_q: [n_tokens] rows
// Within a block everything is integer; each block (K formats: each
// super-block) then adds its integer sums times its float scales:
//   Q8_0  acc += sum(qs * q) * (d * dx)   (q 16-bit, dx per 256 values: quant_format.h)
//   Q4_0  acc += (sum(q4 * q) - 8 sum(q)) * (d * dx)
//   Q4_K  acc += sum_j sc_j sum(q4 * q) * (d * dx) - sum_j m_j sum_j(q) * (dmin * dx)
//   Q5_K  the same with 5-bit q
//   Q6_K  acc += sum_k sc_k (sum(q6 * q) - 32 sum_k(q)) * (d * dx)
// where q, dx are the activation's levels and scale and sum(q) its run sums.
#include <cstring>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/scalar/mxfp4_ops.h"
#include "kernels/cpu/scalar/scalar_ops.h"
#include "kernels/interleave.h"
#include "kernels/quant_format.h"

namespace dancemoe::kernels::scalar {
namespace {

// Sum of q over the 32 values starting at 16 * run.
int sum32(const QuantizedXRow& x, int64_t run) { return x.sums[run] + x.sums[run + 1]; }

float dot_q8_0(const uint8_t* w, const QuantizedXRow& x, int64_t cols) {
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(w + b * sizeof(BlockQ8_0));
    int sum = 0;
    for (int i = 0; i < kQK; ++i) sum += blk->qs[i] * x.q16[b * kQK + i];
    acc += static_cast<float>(sum) * (load_f16(&blk->d) * x.d[b * kQK / kQKK]);
  }
  return acc;
}

float dot_q4_0(const uint8_t* w, const QuantizedXRow& x, int64_t cols) {
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ4_0*>(w + b * sizeof(BlockQ4_0));
    const int8_t* q = x.q + b * kQK;
    int sum = 0;
    for (int i = 0; i < kQK / 2; ++i) {
      sum += (blk->qs[i] & 0xF) * q[i] + (blk->qs[i] >> 4) * q[i + kQK / 2];
    }
    sum -= 8 * sum32(x, 2 * b);
    acc += static_cast<float>(sum) * (load_f16(&blk->d) * x.d[b]);
  }
  return acc;
}

// Q4_K (qh == nullptr) and Q5_K super-block b.
float dot_k_4_5(const uint8_t* scales, const void* d_ptr, const void* dmin_ptr, const uint8_t* qs,
                const uint8_t* qh, const QuantizedXRow& x, int64_t b) {
  const int8_t* q = x.q + b * kQKK;
  int main_sum = 0;
  int min_sum = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    k_scale_min(scales, j, &sc, &m);
    const int c = j / 2;
    int sum = 0;
    const int8_t* xj = q + q_offset(WeightType::kQ4_K, 32 * j);  // interleaved (quant_format.h)
    for (int k = 0; k < 32; ++k) {
      int level = (j & 1) ? (qs[32 * c + k] >> 4) : (qs[32 * c + k] & 0xF);
      if (qh != nullptr) level |= ((qh[k] >> j) & 1) << 4;
      sum += level * xj[k];
    }
    main_sum += sc * sum;
    min_sum += m * sum32(x, 16 * b + 2 * j);
  }
  return static_cast<float>(main_sum) * (load_f16(d_ptr) * x.d[b]) -
         static_cast<float>(min_sum) * (load_f16(dmin_ptr) * x.d[b]);
}

float dot_q4_k(const uint8_t* w, const QuantizedXRow& x, int64_t cols) {
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQKK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ4_K*>(w + b * sizeof(BlockQ4_K));
    acc += dot_k_4_5(blk->scales, &blk->d, &blk->dmin, blk->qs, nullptr, x, b);
  }
  return acc;
}

float dot_q5_k(const uint8_t* w, const QuantizedXRow& x, int64_t cols) {
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQKK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ5_K*>(w + b * sizeof(BlockQ5_K));
    acc += dot_k_4_5(blk->scales, &blk->d, &blk->dmin, blk->qs, blk->qh, x, b);
  }
  return acc;
}

float dot_q6_k(const uint8_t* w, const QuantizedXRow& x, int64_t cols) {
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQKK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ6_K*>(w + b * sizeof(BlockQ6_K));
    const int8_t* q = x.q + b * kQKK;
    int sum = 0;
    for (int h = 0; h < 2; ++h) {
      for (int s = 0; s < 4; ++s) {
        for (int run = 0; run < 2; ++run) {
          int run_sum = 0;
          for (int i = 0; i < 16; ++i) {
            const int l = 16 * run + i;
            const uint8_t low_byte = blk->ql[64 * h + l + 32 * (s & 1)];
            const int low = s < 2 ? (low_byte & 0xF) : (low_byte >> 4);
            const int level = low | (((blk->qh[32 * h + l] >> (2 * s)) & 3) << 4);
            run_sum += level * q[128 * h + 32 * s + l];
          }
          const int k = 8 * h + 2 * s + run;  // run of 16 within the super-block
          sum += blk->scales[k] * (run_sum - 32 * x.sums[16 * b + k]);
        }
      }
    }
    acc += static_cast<float>(sum) * (load_f16(&blk->d) * x.d[b]);
  }
  return acc;
}

using DotFn = float (*)(const uint8_t* w, const QuantizedXRow& x, int64_t cols);

DotFn dot_for(WeightType type) {
  switch (type) {
    case WeightType::kQ8_0:
      return dot_q8_0;
    case WeightType::kQ4_0:
      return dot_q4_0;
    case WeightType::kQ4_K:
      return dot_q4_k;
    case WeightType::kQ5_K:
      return dot_q5_k;
    case WeightType::kQ6_K:
      return dot_q6_k;
    case WeightType::kMXFP4:
      return dot_mxfp4;  // cpu/scalar/mxfp4.cpp
    default:
      return nullptr;
  }
}

}  // namespace

void matmul_quant(const MatmulArgs& args, const void* x_q) {
  if (args.w.layout != WeightLayout::kRows) {
    return matmul_deinterleaved<void>(args, x_q, matmul_quant);
  }
  const WeightView& w = args.w;
  const DotFn dot = dot_for(w.type);
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  for (int64_t t = 0; t < args.n_tokens; ++t) {
    const QuantizedXRow x = quantized_x_row(w.type, x_q, w.cols, t);
    float* yt = args.y + t * args.y_stride;
    for (int64_t r = args.row_begin; r < args.row_end; ++r) {
      yt[r] = dot(static_cast<const uint8_t*>(w.data) + r * row_bytes, x, w.cols);
    }
  }
}

}  // namespace dancemoe::kernels::scalar
