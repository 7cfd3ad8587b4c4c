// Sizes and names of the weight formats (kernels.h, WeightType), and the
// layout of quantized activations that matmul_quant reads.
//
// Block formats store each row of a matrix as cols / block_values blocks,
// exactly as GGUF (ggml) lays them out; the blocks are defined in
// cpu/quant_blocks.h and docs/quantization.md. Float formats are "blocks" of
// one value.
//
// Quantized activations (what quantize_x writes, one row per token) come in
// two groupings, chosen by the weight format:
//   - 32 values per scale for Q8_0, Q4_0 and MXFP4 (the weight block is 32 too);
//   - 256 values per scale for the K formats (one scale per super-block, so
//     the integer sums of a whole super-block can be added before any float).
// A row of `cols` values (cols a multiple of the grouping) is, in order:
//   int8_t  q[cols]             q = round-to-nearest-even(x / d), |q| <= 127
//   float   d[cols / group]     d = max|x| / 127 over the group (0 for all-zero)
//   int16_t sums[cols / 16]     sum of q over each run of 16 values
// padded to a multiple of 64 bytes. x ~= d * q. The sums let kernels fold a
// weight format's offset or minimum (Q4_0's -8, Q6_K's -32, the K mins) into
// one multiply per run instead of one per value.
//
// Q8_0 weights meet 16-bit activations instead (wide_x()):
//   int16_t q[cols]             q = round-to-nearest-even(x / d), |q| <= 32767
//   float   d[ceil(cols / 256)] d = max|x| / 32767 over each group of 256 (the
//                               last group may be shorter: cols is a multiple of 32)
// padded to a multiple of 64 bytes (no sums: Q8_0 has no offset). With 32767
// levels a group of 256 loses nothing that matters (a value 100x below the
// group's maximum still has ~330 levels), and the kernels scale the integer
// sums of a whole group's blocks by d once instead of once per block. Q8_0 is
// chosen for its accuracy, and 8-bit activations would add as much error
// as its weights do (each ~0.5 % of a dot product on Gaussian data); 16-bit
// ones add ~0.002 %. The integer kernels cost the same: the weights are
// widened to int16 once (vpmovsxbw) instead of taking their absolute value
// and moving their signs onto x, and vpmaddwd replaces vpmaddubsw+vpmaddwd.
//
// For Q4_K and Q5_K weights, q stores each group of 128 values in the order
// [0..31, 64..95, 32..63, 96..127] (d and sums keep the natural order): a
// 64-byte load of those weights' nibbles yields sub-blocks (0, 2) in the
// low nibbles and (1, 3) in the high ones, which then meet their activations
// in one 64-byte load too. q_offset() gives a value's position.
//
// Pure functions; thread-safe. This header is part of the leaf `kernels`.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/kernels.h"

namespace dancemoe::kernels {

inline constexpr int kWeightTypeCount = 9;

// True for the block formats (Q8_0 ... Q6_K, MXFP4).
bool is_block_format(WeightType type);
// Values per block: 32 (Q8_0, Q4_0, MXFP4), 256 (K formats), 1 (float types).
int64_t weight_block_values(WeightType type);
// Bytes per block: 34, 18, 144, 176, 210, 17; 4 / 2 / 2 for f32 / f16 / bf16.
int64_t weight_block_bytes(WeightType type);
// Bytes of one row of `cols` values; cols must be a multiple of the block.
int64_t weight_row_bytes(WeightType type, int64_t cols);
// Lower-case names as ggml prints them: "f32", "f16", "bf16", "q8_0",
// "q4_0", "q4_K", "q5_K", "q6_K", "mxfp4".
std::string_view weight_type_name(WeightType type);
// Parses those names, case-insensitively ("Q4_K" and "q4_k" too).
bool parse_weight_type(std::string_view text, WeightType* type);

// Values per activation scale for weights of a block format: 32 (Q4_0) or
// 256 (Q8_0, whose last group may be shorter, and the K formats).
int64_t quantized_x_group(WeightType type);
// Bytes of one quantized activation row (see the layouts above).
int64_t quantized_x_row_bytes(WeightType type, int64_t cols);

// One quantized activation row, split into its arrays: q and sums for the
// 8-bit layouts, q16 for the 16-bit one (the others null).
struct QuantizedXRow {
  const int8_t* q = nullptr;
  const int16_t* q16 = nullptr;
  const float* d = nullptr;
  const int16_t* sums = nullptr;
};
QuantizedXRow quantized_x_row(WeightType type, const void* x_q, int64_t cols, int64_t token);

// True when activations for `type` are 16-bit (Q8_0; see above).
// `static inline` for the reason in cpu/numeric.h (SIMD TUs include this).
static inline bool wide_x(WeightType type) { return type == WeightType::kQ8_0; }

// The distinct layouts of quantized activations: 8-bit 32-value groups
// (Q4_0, MXFP4), 256-value groups interleaved (Q4_K, Q5_K), 256-value groups in
// value order (Q6_K), 16-bit 32-value groups (Q8_0). Weights of types with
// the same layout can share one quantize_x of their input.
inline constexpr int kQuantizedXLayouts = 4;
static inline int quantized_x_layout(WeightType type) {
  return wide_x(type)                                             ? 3
         : weight_block_values(type) == 32                        ? 0
         : type == WeightType::kQ4_K || type == WeightType::kQ5_K ? 1
                                                                  : 2;
}

// True when quantized activations for `type` use the interleaved order above.
// `static inline` for the reason in cpu/numeric.h (SIMD TUs include this).
static inline bool interleaves_x(WeightType type) {
  return type == WeightType::kQ4_K || type == WeightType::kQ5_K;
}
// Where value i of a row sits in q (interleaved: within its group of 128,
// runs of 32 in the order 0, 2, 1, 3).
static inline int64_t q_offset(WeightType type, int64_t i) {
  if (!interleaves_x(type)) return i;
  const int64_t run = (i >> 5) & 3;
  return (i & ~int64_t{127}) | (((run & 1) << 1 | run >> 1) << 5) | (i & 31);
}

}  // namespace dancemoe::kernels
