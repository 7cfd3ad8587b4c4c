#include "kernels/interleave.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/quant_format.h"

namespace dancemoe::kernels {
namespace {

// Rows-layout blocks: chunk c of 32 qs bytes holds sub-block 2c in its low
// nibbles and 2c + 1 in its high ones (value v of each in byte v).
static_assert(std::endian::native == std::endian::little, "interleave_q4_k reads words");

// GGUF's packing of 8 six-bit scales and mins into 12 bytes (the inverse
// of quant_blocks.h's k_scale_min).
void pack_scales_mins(const uint8_t sc[8], const uint8_t m[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

}  // namespace

bool can_interleave(WeightType type, int64_t rows, int64_t cols) {
  return type == WeightType::kQ4_K && rows > 0 && rows % kInterleaveRows == 0 && cols > 0 &&
         cols % kQKK == 0;
}

int64_t interleaved_bytes(int64_t rows, int64_t cols) {
  return rows / kInterleaveRows * (cols / kQKK) * kInterleavedBlockBytes;
}

int64_t weight_view_bytes(const WeightView& w) {
  if (w.layout == WeightLayout::kQ4KInterleaved16) return interleaved_bytes(w.rows, w.cols);
  return w.rows * weight_row_bytes(w.type, w.cols);
}

void interleave_q4_k(const void* rows_layout, int64_t rows, int64_t cols, void* out) {
  const auto* blocks = static_cast<const BlockQ4_K*>(rows_layout);
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t nb = cols / kQKK;
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = dst + (g * nb + b) * kInterleavedBlockBytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        const BlockQ4_K& blk = blocks[(g * kInterleaveRows + r) * nb + b];
        std::memcpy(o + 2 * r, &blk.d, 2);
        std::memcpy(o + kInterleavedDminOffset + 2 * r, &blk.dmin, 2);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          k_scale_min(blk.scales, j, &sc, &m);
          o[kInterleavedScalesOffset + 16 * j + r] = static_cast<uint8_t>(sc | ((m >> 4) << 6));
          uint8_t& lo = o[kInterleavedMinsOffset + 32 * (j / 4) + 2 * r + j % 2];
          lo = (j / 2) % 2 == 0 ? static_cast<uint8_t>((lo & 0xF0) | (m & 0x0F))
                                : static_cast<uint8_t>((lo & 0x0F) | ((m & 0x0F) << 4));
          // Sub-block j's 32 levels as bytes, 8 per word (little-endian:
          // value v in byte v % 8 of word v / 8); then byte i of quad q is
          // value 4q + i | value 16 + 4q + i << 4: words 0 | 2 << 4 hold
          // quads 0-1, words 1 | 3 << 4 quads 2-3. (A loop per value made
          // loading a medium Q4_K_M model 1.8 s slower.)
          uint64_t v[4];
          std::memcpy(v, blk.qs + 32 * (j / 2), 32);
          for (uint64_t& word : v) word = (word >> (4 * (j % 2))) & 0x0F0F0F0F0F0F0F0FULL;
          const uint64_t quads[2] = {v[0] | (v[2] << 4), v[1] | (v[3] << 4)};
          for (int q = 0; q < 4; ++q) {
            std::memcpy(o + kInterleavedQsOffset + 256 * j + 64 * q + 4 * r,
                        reinterpret_cast<const uint8_t*>(quads) + 4 * q, 4);
          }
        }
      }
    }
  }
}

void deinterleave_q4_k(const void* interleaved, int64_t cols, int64_t row_begin, int64_t n_rows,
                       void* out) {
  const auto* src = static_cast<const uint8_t*>(interleaved);
  auto* blocks = static_cast<BlockQ4_K*>(out);
  const int64_t nb = cols / kQKK;
  for (int64_t g = row_begin / kInterleaveRows; g < (row_begin + n_rows) / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* o = src + (g * nb + b) * kInterleavedBlockBytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        BlockQ4_K& blk = blocks[(g * kInterleaveRows + r - row_begin) * nb + b];
        std::memcpy(&blk.d, o + 2 * r, 2);
        std::memcpy(&blk.dmin, o + kInterleavedDminOffset + 2 * r, 2);
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; ++j) {
          const uint8_t s = o[kInterleavedScalesOffset + 16 * j + r];
          const uint8_t lo = o[kInterleavedMinsOffset + 32 * (j / 4) + 2 * r + j % 2];
          sc[j] = s & 63;
          m[j] = static_cast<uint8_t>(((s >> 6) << 4) | ((j / 2) % 2 == 0 ? lo & 0x0F : lo >> 4));
        }
        pack_scales_mins(sc, m, blk.scales);
        for (int j = 0; j < 8; ++j) {
          for (int q = 0; q < 4; ++q) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = o[kInterleavedQsOffset + 256 * j + 64 * q + 4 * r + i];
              for (int half = 0; half < 2; ++half) {
                const int v = 16 * half + 4 * q + i;
                const uint8_t level = half == 0 ? byte & 0x0F : byte >> 4;
                uint8_t& dst = blk.qs[32 * (j / 2) + v];
                dst = (j % 2 == 0) ? static_cast<uint8_t>((dst & 0xF0) | level)
                                   : static_cast<uint8_t>((dst & 0x0F) | (level << 4));
              }
            }
          }
        }
      }
    }
  }
}

void copy_as_rows(const WeightView& w, void* out) {
  if (w.layout == WeightLayout::kQ4KInterleaved16) {
    deinterleave_q4_k(w.data, w.cols, 0, w.rows, out);
  } else {
    std::memcpy(out, w.data, static_cast<size_t>(weight_view_bytes(w)));
  }
}

void matmul_quant_deinterleaved(const MatmulArgs& args, const void* x_q,
                                void (*rows_fn)(const MatmulArgs& args, const void* x_q)) {
  // 64 rows at a time: the rows kernels' chunks (16 rows) stay whole.
  constexpr int64_t kStep = 4 * kInterleaveRows;
  const int64_t row_bytes = weight_row_bytes(WeightType::kQ4_K, args.w.cols);
  thread_local std::vector<uint8_t> rows;
  rows.resize(static_cast<size_t>(kStep * row_bytes));
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kStep) {
    const int64_t n = std::min(kStep, args.row_end - r0);
    deinterleave_q4_k(args.w.data, args.w.cols, r0, n, rows.data());
    MatmulArgs chunk = args;
    chunk.w = WeightView{rows.data(), WeightType::kQ4_K, n, args.w.cols, WeightLayout::kRows};
    chunk.y = args.y + r0;
    chunk.row_begin = 0;
    chunk.row_end = n;
    rows_fn(chunk, x_q);
  }
}

}  // namespace dancemoe::kernels
