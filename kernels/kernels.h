// The CPU kernel interface: one table of function pointers per instruction-set
// level, chosen at run time (cpu_features.h). Model code calls
// cpu_kernels().op(...) and never names an instruction set.
//
// Conventions for every op:
// - Buffers are row-major and contiguous unless a stride is given; shapes are
//   written as [rows, cols]. Pointers to outputs never alias inputs unless the
//   op says "in place".
// - Kernels are single-threaded and reentrant; callers split work across
//   threads (matmuls by output rows, attention by heads).
// - bf16 is stored as uint16_t (the top half of an IEEE f32); f16 as
//   uint16_t IEEE half. f32 -> bf16 rounds to nearest even; NaN stays NaN.
// - Each op has a scalar reference in cpu/scalar/<op>.cpp that reads like the
//   math; the SIMD versions implement the same signature and are checked
//   against it by tests/kernels/parity_test.cpp (quant_parity_test.cpp for
//   the quantized formats).
// - Quantized weights (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, MXFP4) are blocks exactly as
//   GGUF stores them (kernels/quant_format.h); they are computed in place.
//
// This folder is a leaf: it includes nothing else of the project.
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_features.h"

namespace dancemoe::kernels {

// Element types of weight matrices: the float formats and the GGUF block
// formats (layouts in kernels/quant_format.h, blocks in cpu/quant_blocks.h).
enum class WeightType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kQ8_0 = 3,   // 32 values: f16 scale + 32 x int8
  kQ4_0 = 4,   // 32 values: f16 scale + 32 x 4 bits, offset 8
  kQ4_K = 5,   // 256 values: 8 sub-blocks of 32 with 6-bit scales and mins, 4 bits each
  kQ5_K = 6,   // as Q4_K with a fifth bit per value
  kQ6_K = 7,   // 256 values: 16 sub-blocks of 16 with 8-bit scales, 6 bits each
  kMXFP4 = 8,  // 32 values: E8M0 shared exponent + 32 x E2M1 (cpu/mxfp4_block.h)
};

// A weight matrix W: [rows, cols] row-major, as HuggingFace Linear stores it
// ([out_features, in_features]). `data` points at rows * cols elements of `type`;
// for a block format each row is cols / block_values blocks
// (weight_row_bytes(type, cols) bytes) and cols is a multiple of the block.
//
// How the rows lie in memory (kernels/interleave.h): one after another as
// above, or -- Q4_K, Q5_K, Q6_K, Q8_0, BF16: a copy the CPU kernels compute
// faster -- in groups of 16 rows whose blocks of each column of super-blocks
// (pairs of columns for BF16) lie together.
enum class WeightLayout : uint8_t {
  kRows = 0,
  kInterleaved16 = 1,
};

struct WeightView {
  const void* data = nullptr;
  WeightType type = WeightType::kBF16;
  int64_t rows = 0;
  int64_t cols = 0;
  WeightLayout layout = WeightLayout::kRows;
};

// Row ranges the callers split a matmul into (threads, chunks) are
// multiples of this, so the SIMD kernels' row tiles rarely see ragged tails.
inline constexpr int64_t kMatmulRowAlign = 16;

// Arguments of y = x W^T for the output columns [row_begin, row_end) of y.
//   x: [n_tokens, w.cols] (f32 or pre-rounded bf16, see the two entry points)
//   y: [n_tokens, y_stride]; only y[t, row_begin..row_end) is written, overwriting.
struct MatmulArgs {
  WeightView w;
  int64_t n_tokens = 0;
  float* y = nullptr;
  int64_t y_stride = 0;  // elements between rows of y; >= w.rows
  int64_t row_begin = 0;
  int64_t row_end = 0;
};

// Decode-style attention of one query position against a KV cache, for the
// query heads [head_begin, head_end):
//   q:   [n_heads, head_dim]
//   k,v: [n_ctx, kv_stride], head h reads kv head h / (n_heads / n_kv_heads) at
//        column offset kv_head * head_dim
//   out: [n_heads, head_dim]
//   scratch: at least n_ctx floats, owned by the calling thread
//   out[h] = sum_j softmax_j(scale * q[h] . k[j, kvh]) * v[j, kvh]
//   sinks: null, or [n_heads] learned logits (gpt-oss's attention sinks):
//   head h's softmax then also runs over sinks[h], a position with no value,
//   so its weights sum to less than 1.
struct AttentionArgs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  // A bf16 cache instead: k_bf16 and v_bf16 set, k and v null (same layout,
  // each element widened to f32 as it is read).
  const uint16_t* k_bf16 = nullptr;
  const uint16_t* v_bf16 = nullptr;
  int64_t kv_stride = 0;
  int64_t n_ctx = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
  float* out = nullptr;
  float* scratch = nullptr;
  const float* sinks = nullptr;
  int64_t head_begin = 0;
  int64_t head_end = 0;
};

struct CpuKernels {
  CpuLevel level = CpuLevel::kScalar;

  // y = x W^T with f32 activations x: [n_tokens, w.cols]. Exact with respect
  // to the weights (each weight is widened to f32), f32 accumulation. Block
  // formats are dequantized row by row: the slow, exact path (f32 precision).
  void (*matmul_f32)(const MatmulArgs& args, const float* x);

  // y = x W^T for a block-format w, with x quantized by quantize_x for that
  // format (x_q: [n_tokens, quantized_x_row_bytes(w.type, w.cols)]). Integer
  // products within a block, f32 across blocks. Every level gives the same
  // integer block sums; only the f32 summation order differs.
  // Takes either layout; for kInterleaved16, row_begin and row_end are
  // multiples of 16.
  void (*matmul_quant)(const MatmulArgs& args, const void* x_q);
  // matmul_quant computes kInterleaved16 matrices (Q4_K, Q5_K, Q6_K, Q8_0) with a kernel of its
  // own (AVX-512 VNNI), faster than the rows layout; other levels take them
  // through a rows-layout copy of 16 rows at a time (correct, slower), so
  // weights are interleaved only for a level where this is true.
  bool interleaved_k = false;

  // Quantizes activation rows for matmul_quant with weights of `type`:
  //   x: [n_tokens, cols] f32  ->  out: [n_tokens, quantized_x_row_bytes(type, cols)]
  // (layout in kernels/quant_format.h). Bit-identical at every level.
  void (*quantize_x)(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out);

  // Dequantizes n_values (whole blocks, from a block boundary) of `type` to
  // f32, bit-identical to kernels/quantize.h's dequantize_values at every level.
  void (*dequantize)(WeightType type, const void* src, int64_t n_values, float* dst);

  // y = x W^T with activations already rounded to bf16 (f32_to_bf16), for
  // w.type == kBF16 only. Uses the bf16 dot-product instructions where the
  // CPU has them; f32 accumulation. Takes either layout (kInterleaved16:
  // row_begin and row_end multiples of 16).
  void (*matmul_bf16)(const MatmulArgs& args, const uint16_t* x_bf16);
  // matmul_bf16 computes kInterleaved16 bf16 matrices with a kernel of its
  // own (AVX-512 BF16); other levels take them through a rows copy, so bf16
  // weights are interleaved only for a level where this is true.
  bool interleaved_bf16 = false;

  // out = x / sqrt(mean(x^2) + eps) * weight, for one row of n.
  void (*rmsnorm)(const float* x, const float* weight, int64_t n, float eps, float* out);

  // Rotary embedding, "rotate half" (GPT-NeoX / HuggingFace Llama) layout, in place:
  //   x: [n_heads, head_dim]; cos, sin: [head_dim / 2] for this position.
  //   x'[i]      = x[i] cos[i] - x[i + d/2] sin[i]
  //   x'[i + d/2] = x[i + d/2] cos[i] + x[i] sin[i]
  void (*rope)(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin);

  // Numerically stable softmax of one row, in place.
  void (*softmax)(float* x, int64_t n);

  // out = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
  void (*swiglu)(const float* gate, const float* up, int64_t n, float* out);

  // gpt-oss's clamped SwiGLU: g = min(gate, limit), u = clamp(up, -limit, limit),
  // out = (u + 1) * g * sigmoid(alpha * g).
  void (*swiglu_clamped)(const float* gate, const float* up, int64_t n, float alpha, float limit,
                         float* out);

  void (*attention)(const AttentionArgs& args);

  float (*dot)(const float* a, const float* b, int64_t n);
  // y += a * x
  void (*axpy)(float a, const float* x, float* y, int64_t n);

  void (*bf16_to_f32)(const uint16_t* in, int64_t n, float* out);
  void (*f16_to_f32)(const uint16_t* in, int64_t n, float* out);
  void (*f32_to_bf16)(const float* in, int64_t n, uint16_t* out);
};

// The activations of a block-format matmul in the forms its two paths read.
struct QuantizedInput {
  const void* q = nullptr;         // quantize_x(w.type, ...) of x; always
  const uint16_t* bf16 = nullptr;  // x rounded to bf16, or null (f32 compute)
};

// y = x W^T for a block-format W, composed from a level's ops:
//   - the integer kernels (matmul_quant on x.q), except
//   - on AVX-512 BF16 with x.bf16, from quant_gemm_min_tokens(w.type)
//     tokens: W is dequantized in L2-sized chunks of rows (dequantize,
//     f32_to_bf16) and multiplied with the level's matmul_bf16, which
//     outruns the integer kernels there. Both accumulate in f32; they differ
//     by the rounding of x (int8 / int16 vs bf16) and of W to bf16.
// Zen 4, one thread, expert gate 512x1024 (bench_quant_kernels --only gemm):
// Q8_0's bf16 GEMM leads from 32 tokens (64 vs 55 GMAC/s), Q6_K's from 48
// (75 vs 68; 62 vs 70 at 32). Q4_K / Q5_K never switch: with VNNI (every
// level that has BF16) their integer prefill takes rows 8 at a time
// (quant_simd.h, matmul_k_grouped) and leads at every count measured
// (Q4_K 114 vs 82 GMAC/s at 64 tokens, 125 vs 98 at 256). A dequantize +
// f32 GEMM path (AVX-512 without BF16) was dropped: the integer kernels
// beat it by 1.5-2x at every count measured up to 256.
// Single-threaded and reentrant, like every op (per-thread scratch).
inline constexpr int64_t kQuantGemmMinTokens = 16;
int64_t quant_gemm_min_tokens(WeightType type);
void matmul_quantized(const CpuKernels& k, const MatmulArgs& args, const QuantizedInput& x);

// The table for the active level (active_cpu_level()).
const CpuKernels& cpu_kernels();

// The table for a given level; nullptr when this build or CPU lacks it.
const CpuKernels* cpu_kernels_for(CpuLevel level);

}  // namespace dancemoe::kernels
