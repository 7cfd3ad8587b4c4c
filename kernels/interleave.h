// The interleaved copies of Q4_K, Q5_K, Q6_K and Q8_0 matrices
// (WeightLayout::kInterleaved16) that the AVX-512 VNNI matmul computes about
// 2x faster than the GGUF rows (bench_quant_kernels, one thread, Zen 4: see
// docs/quantization.md), and of bf16 expert matrices for the AVX-512 BF16
// matmul (docs/node/README.md, "Interleaved bf16 experts": 1.2-2.2x at 4-16
// tokens on the small preset's shapes, from DRAM).
//
// Why: in the rows layout each row's super-block is decoded on its own --
// its packed scales unpacked, its sums scaled and folded -- about half the
// vector work of a decode GEMV. Here 16 rows' blocks of one column of
// super-blocks lie together with their scales as bytes, so one 512-bit lane
// per row does that work for 16 rows at once, and each 4 bytes of the
// activation are broadcast to all 16 (no shuffles, no horizontal sums).
//
// Layout: rows in groups of 16 (rows % 16 == 0); group g holds its
// cols / 256 super-block columns in order, each interleaved_block_bytes():
// Q4_K (2304 bytes):
//   uint16_t d[16]            f16, row r's d
//   uint16_t dmin[16]         f16, row r's dmin
//   uint8_t  sc[8][16]        sub-block j of row r: its 6-bit scale, and in
//                             bits 6-7 bits 4-5 of its 6-bit min
//   uint8_t  mlo[2][16][2]    [w][r][e]: bits 0-3 of the min of sub-block
//                             4w + e (low nibble) and 4w + 2 + e (high)
//   uint8_t  qs[8][4][16][4]  sub-block j, quad g, row r, byte i: low nibble
//                             value 4g + i, high nibble value 16 + 4g + i
// Q6_K (3360 bytes; sub-blocks of 16 values):
//   uint16_t d[16]            f16, row r's d
//   int8_t   sc[8][16][2]     [p][r][e]: the scale of sub-block 2p + e
//   then per sub-block s (192 bytes, so that one pass reads the block in
//   order: as two streams, from DRAM it ran at half the speed):
//   uint8_t  ql[2][16][4]     half k, row r, byte i: bits 0-3 of value
//                             4k + i (low nibble) and 8 + 4k + i (high)
//   uint8_t  qh[16][4]        row r, byte i: bits 2q, 2q + 1 are bits 4-5 of
//                             value 4q + i
// Q5_K (2816 bytes): Q4_K's, but each sub-block's qs (256 bytes) followed
// by its fifth bits (so that one pass reads the group in order: as two
// streams, from DRAM it ran at half the speed):
//   uint8_t  qh[16][4]        row r, byte i: bit g is the fifth bit of
//                             value 4g + i
// Q8_0 (544 bytes per column of 32-value blocks):
//   uint16_t d[16]            f16, row r's d
//   int8_t   qs[16][16][2]    [k][r][e]: value 2k + e of row r (so that a
//                             widened 32-byte load is 16 rows x 2 values)
// BF16 (64 bytes per pair of columns):
//   uint16_t w[16][2]         [r][e]: value 2p + e of row r (one 512-bit
//                             load is what vdpbf16ps multiplies by an
//                             activation pair broadcast to 16 rows)
// Each is 16 x the rows layout's block (144, 176, 210, 34 bytes; 4 for a
// bf16 pair): the same bytes
// rearranged, so sizes and memory budgets are the same for both layouts.
// Conversion both ways is exact.
//
// Only a node's own compute copies are interleaved: transfers, digests and
// the files stay in the rows layout. Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels {

inline constexpr int64_t kInterleaveRows = 16;
// Offsets within one interleaved Q4_K super-block column of a group.
inline constexpr int64_t kQ4KGroupBytes = 2304;
inline constexpr int64_t kQ4KDminOffset = 32;
inline constexpr int64_t kQ4KScalesOffset = 64;
inline constexpr int64_t kQ4KMinsOffset = 192;
inline constexpr int64_t kQ4KQsOffset = 256;
// ... of a Q5_K one: Q4_K's up to kQ4KQsOffset, then per sub-block its qs
// and its fifth bits ...
inline constexpr int64_t kQ5KGroupBytes = 2816;
inline constexpr int64_t kQ5KSubBlockBytes = 320;  // qs, then the fifth bits at +256
// ... of a Q8_0 one (a column of 32-value blocks) ...
inline constexpr int64_t kQ8GroupBytes = 544;
// ... and of a Q6_K one.
inline constexpr int64_t kQ6KGroupBytes = 3360;
inline constexpr int64_t kQ6KScalesOffset = 32;
inline constexpr int64_t kQ6KLevelsOffset = 288;
inline constexpr int64_t kQ6KSubBlockBytes = 192;  // ql, then qh at +128

// True when a matrix of this format and shape can be interleaved: Q4_K,
// Q5_K or Q6_K with cols a multiple of 256, Q8_0 of 32, BF16 of 2; rows a
// multiple of 16.
bool can_interleave(WeightType type, int64_t rows, int64_t cols);
// Bytes a view points at, in its layout (the same for both).
int64_t weight_view_bytes(const WeightView& w);

// rows layout (rows x cols, can_interleave) -> interleaved, as many bytes.
void interleave_matrix(WeightType type, const void* rows_layout, int64_t rows, int64_t cols,
                       void* out);
// Rows [row_begin, row_begin + n_rows) of an interleaved matrix (both
// multiples of 16) -> the rows layout, n_rows * weight_row_bytes bytes.
void deinterleave_rows(WeightType type, const void* interleaved, int64_t cols, int64_t row_begin,
                       int64_t n_rows, void* out);
// Writes the view's bytes in the rows layout (a copy for kRows).
void copy_as_rows(const WeightView& w, void* out);

// A matmul entry point for a level without an interleaved kernel for w's
// format (matmul_quant, matmul_bf16, matmul_f32): deinterleaves a few groups
// of rows at a time into a per-thread buffer and runs `rows_fn` (that
// level's rows-layout entry point) on each. x as rows_fn takes it.
template <typename X>
void matmul_deinterleaved(const MatmulArgs& args, const X* x,
                          void (*rows_fn)(const MatmulArgs& args, const X* x));

}  // namespace dancemoe::kernels
