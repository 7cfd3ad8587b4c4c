// The interleaved copy of a Q4_K matrix (WeightLayout::kQ4KInterleaved16)
// that the AVX-512 VNNI matmul computes about 2x faster than the GGUF rows
// (bench_quant_kernels, one thread, Zen 4: see docs/quantization.md).
//
// Why: in the rows layout each row's super-block is decoded on its own --
// its 12 packed scale bytes unpacked, its sums scaled and folded -- about
// half the vector work of a decode GEMV. Here 16 rows' blocks of one column
// of super-blocks lie together, their scales already unpacked to bytes, so
// one 512-bit lane per row does that work for 16 rows at once, and each 4
// bytes of the activation are broadcast to all 16 (no shuffles).
//
// Layout: rows in groups of 16 (rows % 16 == 0); group g holds its
// cols / 256 super-block columns in order, each kInterleavedBlockBytes:
//   uint16_t d[16]            f16, row r's d
//   uint16_t dmin[16]         f16, row r's dmin
//   uint8_t  sc[8][16]        sub-block j of row r: its 6-bit scale, and in
//                             bits 6-7 bits 4-5 of its 6-bit min
//   uint8_t  mlo[2][16][2]    [w][r][e]: bits 0-3 of the min of sub-block
//                             4w + e (low nibble) and 4w + 2 + e (high)
//   uint8_t  qs[8][4][16][4]  sub-block j, quad g, row r, byte i: low nibble
//                             value 4g + i, high nibble value 16 + 4g + i
// = 2304 bytes per 16 rows: 144 per row and super-block, as in the rows
// layout (the 6-bit scales and mins take the same 12 bytes, rearranged), so
// sizes and memory budgets are the same for both. Conversion both ways is
// exact.
//
// Only a node's own compute copies are interleaved: transfers, digests and
// the files stay in the rows layout. Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels {

inline constexpr int64_t kInterleaveRows = 16;
inline constexpr int64_t kInterleavedBlockBytes = 2304;
// Offsets within one interleaved super-block column of a group.
inline constexpr int64_t kInterleavedDminOffset = 32;
inline constexpr int64_t kInterleavedScalesOffset = 64;
inline constexpr int64_t kInterleavedMinsOffset = 192;
inline constexpr int64_t kInterleavedQsOffset = 256;

// True when a matrix of this format and shape can be interleaved: Q4_K,
// rows a multiple of 16, cols of 256.
bool can_interleave(WeightType type, int64_t rows, int64_t cols);
// Bytes of the interleaved copy of a rows x cols Q4_K matrix (the same as
// the rows layout's).
int64_t interleaved_bytes(int64_t rows, int64_t cols);
// Bytes a view points at, in its layout.
int64_t weight_view_bytes(const WeightView& w);

// rows layout (rows x cols Q4_K, can_interleave) -> interleaved; out holds
// interleaved_bytes(rows, cols).
void interleave_q4_k(const void* rows_layout, int64_t rows, int64_t cols, void* out);
// Rows [row_begin, row_begin + n_rows) of an interleaved matrix (both
// multiples of 16) -> the rows layout, n_rows * weight_row_bytes bytes.
void deinterleave_q4_k(const void* interleaved, int64_t cols, int64_t row_begin, int64_t n_rows,
                       void* out);
// Writes the view's bytes in the rows layout (a copy for kRows).
void copy_as_rows(const WeightView& w, void* out);

// matmul_quant for a level without an interleaved kernel: deinterleaves a
// few groups of rows at a time into a per-thread buffer and runs `rows_fn`
// (that level's rows-layout matmul_quant) on each. x_q as for matmul_quant.
void matmul_quant_deinterleaved(const MatmulArgs& args, const void* x_q,
                                void (*rows_fn)(const MatmulArgs& args, const void* x_q));

}  // namespace dancemoe::kernels
