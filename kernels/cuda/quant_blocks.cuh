// Device-side reading of the GGUF block formats (layouts in
// kernels/cpu/quant_blocks.h, kernels/cpu/mxfp4_block.h and docs/quantization.md): one group of 32
// consecutive values of a row at a time, dequantized exactly as the CPU
// reference does (the same f32 products in the same order). Included only
// by .cu files.
//
// Group g of a row covers values [32 g, 32 g + 32): for Q8_0 / Q4_0 that is
// block g; for the K formats sub-block g % 8 of super-block g / 8 (Q6_K:
// its two runs of 16 with their own scales; MXFP4: block g).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels::cuda {

__device__ __forceinline__ float half_bits_to_float(const uint8_t* p) {
  const uint16_t h = static_cast<uint16_t>(p[0] | (p[1] << 8));
  return __half2float(__ushort_as_half(h));
}

// Values of `type` per block and bytes per block (block formats only).
__host__ __device__ constexpr int quant_block_values(WeightType type) {
  return type == WeightType::kQ8_0 || type == WeightType::kQ4_0 || type == WeightType::kMXFP4 ? 32
                                                                                              : 256;
}
__host__ __device__ constexpr int quant_block_bytes(WeightType type) {
  return type == WeightType::kQ8_0    ? 34
         : type == WeightType::kQ4_0  ? 18
         : type == WeightType::kMXFP4 ? 17
         : type == WeightType::kQ4_K  ? 144
         : type == WeightType::kQ5_K  ? 176
                                      : 210;
}

__device__ __forceinline__ void k_scale_min_dev(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// MXFP4's E2M1 codes as values x 2, and its scale 2^(e - 128) (exact for
// every e), as kernels/cpu/mxfp4_block.h defines them.
__device__ __forceinline__ float mxfp4_level(int code) {
  constexpr float kLevels[8] = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f, 12.0f};
  const float v = kLevels[code & 7];
  return (code & 8) ? -v : v;
}
__device__ __forceinline__ float mxfp4_scale_dev(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return __uint_as_float(bits);
}

// Whether dequant_group reads `type` (the block formats above).
__host__ __device__ constexpr bool is_device_block_type(WeightType type) {
  return type == WeightType::kQ8_0 || type == WeightType::kQ4_0 || type == WeightType::kQ4_K ||
         type == WeightType::kQ5_K || type == WeightType::kQ6_K || type == WeightType::kMXFP4;
}

// The 32 values of group g of a row (row: the row's first block).
template <WeightType kType>
__device__ __forceinline__ void dequant_group(const uint8_t* row, int64_t g, float v[32]) {
  if constexpr (kType == WeightType::kQ8_0) {
    const uint8_t* b = row + g * 34;
    const float d = half_bits_to_float(b);
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = static_cast<float>(static_cast<int8_t>(b[2 + i])) * d;
  } else if constexpr (kType == WeightType::kQ4_0) {
    const uint8_t* b = row + g * 18;
    const float d = half_bits_to_float(b);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      v[i] = static_cast<float>((b[2 + i] & 0xF) - 8) * d;
      v[i + 16] = static_cast<float>((b[2 + i] >> 4) - 8) * d;
    }
  } else if constexpr (kType == WeightType::kQ4_K || kType == WeightType::kQ5_K) {
    constexpr bool kQ5 = kType == WeightType::kQ5_K;
    const uint8_t* b = row + (g / 8) * (kQ5 ? 176 : 144);
    const int j = static_cast<int>(g % 8);
    const float d = half_bits_to_float(b);
    const float dmin = half_bits_to_float(b + 2);
    int sc, m;
    k_scale_min_dev(b + 4, j, &sc, &m);
    const float dj = d * static_cast<float>(sc);
    const float mj = dmin * static_cast<float>(m);
    const uint8_t* qs = b + (kQ5 ? 48 : 16) + 32 * (j / 2);
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      int q = (j & 1) ? (qs[k] >> 4) : (qs[k] & 0xF);
      if constexpr (kQ5) q |= ((b[16 + k] >> j) & 1) << 4;
      v[k] = dj * static_cast<float>(q) - mj;
    }
  } else if constexpr (kType == WeightType::kMXFP4) {
    const uint8_t* b = row + g * 17;
    const float s = mxfp4_scale_dev(b[0]);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      v[i] = mxfp4_level(b[1 + i] & 0xF) * s;
      v[i + 16] = mxfp4_level(b[1 + i] >> 4) * s;
    }
  } else {  // Q6_K
    const uint8_t* b = row + (g / 8) * 210;
    const int p0 = static_cast<int>(g % 8) * 32;  // position within the super-block
    const int h = p0 / 128;
    const int s = (p0 % 128) / 32;
    const uint8_t* ql = b + 64 * h + 32 * (s & 1);
    const uint8_t* qh = b + 128 + 32 * h;
    const float d = half_bits_to_float(b + 208);
    const float d0 = d * static_cast<float>(static_cast<int8_t>(b[192 + p0 / 16]));
    const float d1 = d * static_cast<float>(static_cast<int8_t>(b[192 + p0 / 16 + 1]));
#pragma unroll
    for (int l = 0; l < 32; ++l) {
      const int low = s < 2 ? (ql[l] & 0xF) : (ql[l] >> 4);
      const int q = (low | (((qh[l] >> (2 * s)) & 3) << 4)) - 32;
      v[l] = (l < 16 ? d0 : d1) * static_cast<float>(q);
    }
  }
}

}  // namespace dancemoe::kernels::cuda
