// Dequantization of the block formats: each value exactly as the format
// defines it (cpu/quant_blocks.h), evaluated in the same order ggml's
// reference does, so results are bit-identical to it:
//   Q8_0  y = qs * d                 Q4_0  y = (q - 8) * d
//   Q4_K  y = (d * sc) * q - (dmin * m)
//   Q5_K  as Q4_K with the fifth bit
//   Q6_K  y = (d * sc) * (q - 32)
#include <cstring>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/scalar/mxfp4_ops.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe::kernels {
namespace {

void dequantize_q8_0(const uint8_t* src, int64_t n_blocks, float* y) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockQ8_0 blk;
    std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
    const float d = f16_to_float(blk.d);
    for (int i = 0; i < kQK; ++i) y[b * kQK + i] = static_cast<float>(blk.qs[i]) * d;
  }
}

void dequantize_q4_0(const uint8_t* src, int64_t n_blocks, float* y) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockQ4_0 blk;
    std::memcpy(&blk, src + b * sizeof blk, sizeof blk);
    const float d = f16_to_float(blk.d);
    for (int i = 0; i < kQK / 2; ++i) {
      y[b * kQK + i] = static_cast<float>((blk.qs[i] & 0xF) - 8) * d;
      y[b * kQK + i + kQK / 2] = static_cast<float>((blk.qs[i] >> 4) - 8) * d;
    }
  }
}

// Q4_K and Q5_K share everything but the fifth bit (qh == nullptr for Q4_K).
void dequantize_k_4_5(const uint8_t* scales, uint16_t d_bits, uint16_t dmin_bits, const uint8_t* qs,
                      const uint8_t* qh, float* y) {
  const float d = f16_to_float(d_bits);
  const float dmin = f16_to_float(dmin_bits);
  for (int c = 0; c < 4; ++c) {
    for (int half = 0; half < 2; ++half) {
      const int j = 2 * c + half;
      uint8_t sc, m;
      k_scale_min(scales, j, &sc, &m);
      const float dj = d * static_cast<float>(sc);
      const float mj = dmin * static_cast<float>(m);
      for (int k = 0; k < 32; ++k) {
        int q = half == 0 ? (qs[32 * c + k] & 0xF) : (qs[32 * c + k] >> 4);
        if (qh != nullptr && ((qh[k] >> j) & 1)) q += 16;
        y[64 * c + 32 * half + k] = dj * static_cast<float>(q) - mj;
      }
    }
  }
}

void dequantize_q4_k(const uint8_t* src, int64_t n_blocks, float* y) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ4_K*>(src + b * sizeof(BlockQ4_K));
    uint16_t d, dmin;
    std::memcpy(&d, &blk->d, 2);
    std::memcpy(&dmin, &blk->dmin, 2);
    dequantize_k_4_5(blk->scales, d, dmin, blk->qs, nullptr, y + b * kQKK);
  }
}

void dequantize_q5_k(const uint8_t* src, int64_t n_blocks, float* y) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ5_K*>(src + b * sizeof(BlockQ5_K));
    uint16_t d, dmin;
    std::memcpy(&d, &blk->d, 2);
    std::memcpy(&dmin, &blk->dmin, 2);
    dequantize_k_4_5(blk->scales, d, dmin, blk->qs, blk->qh, y + b * kQKK);
  }
}

void dequantize_q6_k(const uint8_t* src, int64_t n_blocks, float* y) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ6_K*>(src + b * sizeof(BlockQ6_K));
    const float d = load_f16(&blk->d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk->ql + 64 * h;
      const uint8_t* qh = blk->qh + 32 * h;
      float* yh = y + b * kQKK + 128 * h;
      for (int s = 0; s < 4; ++s) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t low_byte = ql[l + 32 * (s & 1)];
          const int low = s < 2 ? (low_byte & 0xF) : (low_byte >> 4);
          const int q = (low | (((qh[l] >> (2 * s)) & 3) << 4)) - 32;
          const int p = 32 * s + l;
          yh[p] = d * static_cast<float>(blk->scales[8 * h + p / 16]) * static_cast<float>(q);
        }
      }
    }
  }
}

void widen(WeightType type, const void* src, int64_t n, float* dst) {
  const auto* h = static_cast<const uint16_t*>(src);
  switch (type) {
    case WeightType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case WeightType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_float(h[i]);
      return;
    case WeightType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(h[i]);
      return;
    default:
      return;
  }
}

}  // namespace

void dequantize_values(WeightType type, const void* src, int64_t n_values, float* dst) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  const int64_t n_blocks = n_values / weight_block_values(type);
  switch (type) {
    case WeightType::kQ8_0:
      return dequantize_q8_0(bytes, n_blocks, dst);
    case WeightType::kQ4_0:
      return dequantize_q4_0(bytes, n_blocks, dst);
    case WeightType::kQ4_K:
      return dequantize_q4_k(bytes, n_blocks, dst);
    case WeightType::kQ5_K:
      return dequantize_q5_k(bytes, n_blocks, dst);
    case WeightType::kQ6_K:
      return dequantize_q6_k(bytes, n_blocks, dst);
    case WeightType::kMXFP4:
      return dequantize_mxfp4(bytes, n_blocks, dst);  // cpu/scalar/mxfp4.cpp
    case WeightType::kF32:
    case WeightType::kF16:
    case WeightType::kBF16:
      return widen(type, src, n_values, dst);
  }
}

}  // namespace dancemoe::kernels
