// MXFP4 reference (cpu/mxfp4_block.h): quantization, dequantization, and
// the integer dot product against quantized activations.
//
// Quantizer: per block of 32 values, the shared exponent e is the smallest
// whose scale s = 2^(e - 128) maps the largest magnitude into the levels'
// range (|x| / s <= 12), or one less (the largest values then saturate at
// +-12 while the rest gain a bit); of the two the one with the smaller
// squared error is kept. Each value becomes its nearest level, ties to the
// even code (E2M1's round-to-nearest-even: the code's low bit is its
// mantissa bit). Deterministic; a zero block is all zero codes with e = 0.
#include <cmath>
#include <cstring>

#include "kernels/cpu/mxfp4_block.h"
#include "kernels/cpu/scalar/mxfp4_ops.h"

namespace dancemoe::kernels {
namespace {

// The magnitude code (0..7) nearest to a (a >= 0, in level units), ties to even.
int nearest_magnitude(float a) {
  for (int idx = 0; idx < 7; ++idx) {
    const float mid = 0.5f * static_cast<float>(kMxfp4Levels[idx] + kMxfp4Levels[idx + 1]);
    if (a < mid) return idx;
    if (a == mid) return (idx % 2 == 0) ? idx : idx + 1;
  }
  return 7;
}

int encode(float x, float inv_scale) {
  const int idx = nearest_magnitude(std::fabs(x) * inv_scale);
  return (x < 0.0f && idx != 0) ? (idx | 8) : idx;
}

float block_error(const float* x, uint8_t e) {
  const float s = mxfp4_scale(e);
  const float inv = 1.0f / s;
  float err = 0.0f;
  for (int i = 0; i < kMxfp4Values; ++i) {
    const float d = x[i] - static_cast<float>(kMxfp4Levels[encode(x[i], inv)]) * s;
    err += d * d;
  }
  return err;
}

}  // namespace

void quantize_mxfp4(const float* x, int64_t n_blocks, uint8_t* dst) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kMxfp4Values) {
    float amax = 0.0f;
    for (int i = 0; i < kMxfp4Values; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    BlockMXFP4 blk{};
    if (amax > 0.0f) {
      int e = 128 + static_cast<int>(std::ceil(std::log2(amax / 12.0f)));
      e = e < 0 ? 0 : (e > 254 ? 254 : e);
      // log2 may be off by one at exact powers: settle e exactly.
      while (e < 254 && mxfp4_scale(static_cast<uint8_t>(e)) * 12.0f < amax) ++e;
      while (e > 0 && mxfp4_scale(static_cast<uint8_t>(e - 1)) * 12.0f >= amax) --e;
      if (e > 0 &&
          block_error(x, static_cast<uint8_t>(e - 1)) < block_error(x, static_cast<uint8_t>(e))) {
        --e;
      }
      blk.e = static_cast<uint8_t>(e);
      const float inv = 1.0f / mxfp4_scale(blk.e);
      for (int j = 0; j < kMxfp4Values / 2; ++j) {
        blk.qs[j] =
            static_cast<uint8_t>(encode(x[j], inv) | (encode(x[j + kMxfp4Values / 2], inv) << 4));
      }
    }
    std::memcpy(dst + b * kMxfp4BlockBytes, &blk, sizeof blk);
  }
}

void dequantize_mxfp4(const uint8_t* src, int64_t n_blocks, float* y) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = src + b * kMxfp4BlockBytes;
    const float s = mxfp4_scale(blk[0]);
    for (int i = 0; i < kMxfp4Values; ++i) {
      y[b * kMxfp4Values + i] = static_cast<float>(kMxfp4Levels[mxfp4_code(blk + 1, i)]) * s;
    }
  }
}

namespace scalar {

float dot_mxfp4(const uint8_t* w, const QuantizedXRow& x, int64_t cols) {
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kMxfp4Values; ++b) {
    const uint8_t* blk = w + b * kMxfp4BlockBytes;
    const int8_t* q = x.q + b * kMxfp4Values;
    int sum = 0;
    for (int i = 0; i < kMxfp4Values; ++i) sum += kMxfp4Levels[mxfp4_code(blk + 1, i)] * q[i];
    acc += static_cast<float>(sum) * (mxfp4_scale(blk[0]) * x.d[b]);
  }
  return acc;
}

}  // namespace scalar
}  // namespace dancemoe::kernels
