// Reference quantizers of the block formats (cpu/quant_blocks.h).
//
// Q8_0 and Q4_0 use the format's plain rule (scale from the largest
// magnitude). The K formats pick each sub-block's scale (and min) by trying
// a few candidate scales around the range-based one, solving the weighted
// least-squares (scale, min) for the levels each candidate gives, and
// keeping the best; the sub-block scales are then themselves quantized
// (6 bits for Q4_K / Q5_K, 8 bits for Q6_K) and the values re-quantized
// with the scales the block actually stores. Weights w_i = mean-square
// level + |x_i| (Q4_K / Q5_K) or x_i^2 (Q6_K) favour the large values, whose
// error matters most in a dot product.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/scalar/mxfp4_ops.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe::kernels {
namespace {

int round_int(float x) { return static_cast<int>(std::nearbyint(x)); }

void quantize_q8_0(const float* x, int64_t n_blocks, uint8_t* dst) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK) {
    float amax = 0.0f;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 blk;
    blk.d = float_to_f16(d);
    for (int i = 0; i < kQK; ++i) blk.qs[i] = static_cast<int8_t>(std::round(x[i] * id));
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

// The scale maps the value of largest magnitude to -8, so the full range
// -8..7 is used on the side where it matters.
void quantize_q4_0(const float* x, int64_t n_blocks, uint8_t* dst) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < kQK; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 blk;
    blk.d = float_to_f16(d);
    auto level = [&](float v) {
      return static_cast<uint8_t>(std::min(15, static_cast<int>(v * id + 8.5f)));
    };
    for (int i = 0; i < kQK / 2; ++i) {
      blk.qs[i] = static_cast<uint8_t>(level(x[i]) | (level(x[i + kQK / 2]) << 4));
    }
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

// Best (scale, min) for n values x with weights w, levels 0..nmax, model
// x ~= scale * q - min with min >= 0 (the format stores -min). Returns the
// scale; *min_out the min; levels in q.
float fit_scale_min(const float* x, const float* w, int n, int nmax, uint8_t* q, float* min_out) {
  float lo = 0.0f;
  float hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (hi <= lo) {
    std::fill(q, q + n, 0);
    *min_out = -lo;
    return 0.0f;
  }
  float best_err = INFINITY;
  float best_scale = (hi - lo) / static_cast<float>(nmax);
  float best_min = -lo;
  uint8_t levels[32];
  // Candidate inverse scales: the range-based one stretched by -10 % .. +10 %.
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / (hi - lo);
    float sw = 0, swq = 0, swqq = 0, swx = 0, swqx = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_int(iscale * (x[i] - lo)), 0, nmax);
      levels[i] = static_cast<uint8_t>(l);
      sw += w[i];
      swq += w[i] * static_cast<float>(l);
      swqq += w[i] * static_cast<float>(l * l);
      swx += w[i] * x[i];
      swqx += w[i] * static_cast<float>(l) * x[i];
    }
    // Least squares for x ~= a * l + c (a = scale, c = -min).
    const float det = sw * swqq - swq * swq;
    if (det <= 0.0f) continue;
    float a = (sw * swqx - swq * swx) / det;
    float c = (swqq * swx - swq * swqx) / det;
    if (c > 0.0f) {  // min must be <= 0 in x: refit with c = 0
      c = 0.0f;
      a = swqq > 0.0f ? swqx / swqq : 0.0f;
    }
    if (a <= 0.0f) continue;  // scales are stored unsigned
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = a * static_cast<float>(levels[i]) + c - x[i];
      err += w[i] * diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = a;
      best_min = -c;
      std::memcpy(q, levels, static_cast<size_t>(n));
    }
  }
  if (best_err == INFINITY) {  // every candidate degenerate: plain range quantization
    const float iscale = static_cast<float>(nmax) / (hi - lo);
    for (int i = 0; i < n; ++i) {
      q[i] = static_cast<uint8_t>(std::clamp(round_int(iscale * (x[i] - lo)), 0, nmax));
    }
  }
  *min_out = best_min;
  return best_scale;
}

// Packs 8 six-bit scales and mins into the 12 bytes of a Q4_K / Q5_K block
// (the inverse of k_scale_min).
void pack_k_scales(const uint8_t* sc, const uint8_t* m, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// One Q4_K / Q5_K super-block: x[256] -> d, dmin, packed scales, levels L[256].
void quantize_k_4_5_block(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out,
                          uint8_t* scales_out, uint8_t* levels) {
  float sum_x2 = 0.0f;
  for (int i = 0; i < kQKK; ++i) sum_x2 += x[i] * x[i];
  const float av_x = std::sqrt(sum_x2 / kQKK);
  float w[kQKK];
  for (int i = 0; i < kQKK; ++i) w[i] = av_x + std::fabs(x[i]);

  float scale[8], min[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    scale[j] = fit_scale_min(x + 32 * j, w + 32 * j, 32, nmax, levels + 32 * j, &min[j]);
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(std::min(63, round_int(inv_scale * scale[j])));
    m[j] = static_cast<uint8_t>(std::min(63, round_int(inv_min * min[j])));
  }
  pack_k_scales(sc, m, scales_out);
  *d_out = float_to_f16(max_scale / 63.0f);
  *dmin_out = float_to_f16(max_min / 63.0f);

  // Re-quantize with the scales as stored.
  const float d = f16_to_float(*d_out);
  const float dmin = f16_to_float(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    uint8_t s, mm;
    k_scale_min(scales_out, j, &s, &mm);
    const float dj = d * static_cast<float>(s);
    if (dj == 0.0f) {
      std::fill(levels + 32 * j, levels + 32 * j + 32, 0);
      continue;
    }
    const float mj = dmin * static_cast<float>(mm);
    for (int i = 0; i < 32; ++i) {
      levels[32 * j + i] =
          static_cast<uint8_t>(std::clamp(round_int((x[32 * j + i] + mj) / dj), 0, nmax));
    }
  }
}

void quantize_q4_k(const float* x, int64_t n_blocks, uint8_t* dst) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQKK) {
    BlockQ4_K blk;
    uint8_t levels[kQKK];
    quantize_k_4_5_block(x, 15, &blk.d, &blk.dmin, blk.scales, levels);
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 32; ++k) {
        blk.qs[32 * c + k] =
            static_cast<uint8_t>(levels[64 * c + k] | (levels[64 * c + 32 + k] << 4));
      }
    }
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

void quantize_q5_k(const float* x, int64_t n_blocks, uint8_t* dst) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQKK) {
    BlockQ5_K blk;
    uint8_t levels[kQKK];
    quantize_k_4_5_block(x, 31, &blk.d, &blk.dmin, blk.scales, levels);
    std::memset(blk.qh, 0, sizeof blk.qh);
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 32; ++k) {
        const uint8_t lo = levels[64 * c + k];
        const uint8_t hi = levels[64 * c + 32 + k];
        blk.qs[32 * c + k] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        blk.qh[k] =
            static_cast<uint8_t>(blk.qh[k] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

// Symmetric scale for n values, levels -nmax .. nmax - 1, weights x^2.
float fit_symmetric_scale(const float* x, int n, int nmax, int8_t* q) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) {
    std::fill(q, q + n, 0);
    return 0.0f;
  }
  float best_err = INFINITY;
  float best_scale = 0.0f;
  int8_t levels[16];
  // The largest value maps to -nmax (the side with one more level), then
  // the candidates stretch the inverse scale by -9 % .. +9 %.
  for (int step = -9; step <= 9; ++step) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    float sxl = 0.0f, sll = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_int(iscale * x[i]), -nmax, nmax - 1);
      levels[i] = static_cast<int8_t>(l);
      const float w = x[i] * x[i];
      sxl += w * x[i] * static_cast<float>(l);
      sll += w * static_cast<float>(l * l);
    }
    if (sll <= 0.0f) continue;
    const float scale = sxl / sll;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * static_cast<float>(levels[i]) - x[i];
      err += x[i] * x[i] * diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = scale;
      std::memcpy(q, levels, static_cast<size_t>(n));
    }
  }
  return best_scale;
}

void quantize_q6_k(const float* x, int64_t n_blocks, uint8_t* dst) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQKK) {
    float scale[16];
    int8_t levels[kQKK];
    float max_scale = 0.0f;
    float max_abs_scale = 0.0f;
    for (int k = 0; k < 16; ++k) {
      scale[k] = fit_symmetric_scale(x + 16 * k, 16, 32, levels + 16 * k);
      if (std::fabs(scale[k]) > max_abs_scale) {
        max_abs_scale = std::fabs(scale[k]);
        max_scale = scale[k];
      }
    }
    BlockQ6_K blk;
    std::memset(&blk, 0, sizeof blk);
    const float iscale = max_scale != 0.0f ? -128.0f / max_scale : 0.0f;
    for (int k = 0; k < 16; ++k) {
      blk.scales[k] = static_cast<int8_t>(std::min(127, round_int(iscale * scale[k])));
    }
    const uint16_t d_bits = float_to_f16(iscale != 0.0f ? 1.0f / iscale : 0.0f);
    std::memcpy(&blk.d, &d_bits, 2);
    const float d = f16_to_float(d_bits);
    uint8_t q[kQKK];
    for (int k = 0; k < 16; ++k) {
      const float dk = d * static_cast<float>(blk.scales[k]);
      for (int i = 0; i < 16; ++i) {
        const int l = dk != 0.0f ? std::clamp(round_int(x[16 * k + i] / dk), -32, 31) : 0;
        q[16 * k + i] = static_cast<uint8_t>(l + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* qh_src = q + 128 * h + l;  // values l, l + 32, l + 64, l + 96
        blk.ql[64 * h + l] = static_cast<uint8_t>((qh_src[0] & 0xF) | ((qh_src[64] & 0xF) << 4));
        blk.ql[64 * h + l + 32] =
            static_cast<uint8_t>((qh_src[32] & 0xF) | ((qh_src[96] & 0xF) << 4));
        blk.qh[32 * h + l] =
            static_cast<uint8_t>((qh_src[0] >> 4) | ((qh_src[32] >> 4) << 2) |
                                 ((qh_src[64] >> 4) << 4) | ((qh_src[96] >> 4) << 6));
      }
    }
    std::memcpy(dst + b * sizeof blk, &blk, sizeof blk);
  }
}

void narrow(WeightType type, const float* x, int64_t n, void* dst) {
  auto* h = static_cast<uint16_t*>(dst);
  switch (type) {
    case WeightType::kF32:
      std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case WeightType::kF16:
      for (int64_t i = 0; i < n; ++i) h[i] = float_to_f16(x[i]);
      return;
    case WeightType::kBF16:
      for (int64_t i = 0; i < n; ++i) h[i] = float_to_bf16(x[i]);
      return;
    default:
      return;
  }
}

}  // namespace

void quantize_rows(WeightType type, const float* src, int64_t n_rows, int64_t cols, void* dst) {
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t row_bytes = weight_row_bytes(type, cols);
  const int64_t n_blocks = cols / weight_block_values(type);
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* x = src + r * cols;
    uint8_t* y = out + r * row_bytes;
    switch (type) {
      case WeightType::kQ8_0:
        quantize_q8_0(x, n_blocks, y);
        break;
      case WeightType::kQ4_0:
        quantize_q4_0(x, n_blocks, y);
        break;
      case WeightType::kQ4_K:
        quantize_q4_k(x, n_blocks, y);
        break;
      case WeightType::kQ5_K:
        quantize_q5_k(x, n_blocks, y);
        break;
      case WeightType::kQ6_K:
        quantize_q6_k(x, n_blocks, y);
        break;
      case WeightType::kMXFP4:
        quantize_mxfp4(x, n_blocks, y);  // cpu/scalar/mxfp4.cpp
        break;
      case WeightType::kF32:
      case WeightType::kF16:
      case WeightType::kBF16:
        narrow(type, x, cols, y);
        break;
    }
  }
}

}  // namespace dancemoe::kernels
