#include "kernels/interleave.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/quant_format.h"

namespace dancemoe::kernels {
namespace {

// Rows-layout blocks: chunk c of 32 qs bytes holds sub-block 2c in its low
// nibbles and 2c + 1 in its high ones (value v of each in byte v).
static_assert(std::endian::native == std::endian::little, "interleave_k reads words");

// GGUF's packing of 8 six-bit scales and mins into 12 bytes (the inverse
// of quant_blocks.h's k_scale_min).
void pack_scales_mins(const uint8_t sc[8], const uint8_t m[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

// Q4_K and Q5_K (kFifth: its blocks are Q4_K's with qh[32] before qs).
template <class Block>
constexpr bool kFifth = std::is_same_v<Block, BlockQ5_K>;

template <class Block>
void interleave_k(const void* rows_layout, int64_t rows, int64_t cols, void* out) {
  const auto* blocks = static_cast<const Block*>(rows_layout);
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t nb = cols / kQKK;
  const int64_t group_bytes = kFifth<Block> ? kQ5KGroupBytes : kQ4KGroupBytes;
  const int64_t qs_stride = kFifth<Block> ? kQ5KSubBlockBytes : 256;
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = dst + (g * nb + b) * group_bytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        const Block& blk = blocks[(g * kInterleaveRows + r) * nb + b];
        std::memcpy(o + 2 * r, &blk.d, 2);
        std::memcpy(o + kQ4KDminOffset + 2 * r, &blk.dmin, 2);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          k_scale_min(blk.scales, j, &sc, &m);
          o[kQ4KScalesOffset + 16 * j + r] = static_cast<uint8_t>(sc | ((m >> 4) << 6));
          uint8_t& lo = o[kQ4KMinsOffset + 32 * (j / 4) + 2 * r + j % 2];
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
            std::memcpy(o + kQ4KQsOffset + qs_stride * j + 64 * q + 4 * r,
                        reinterpret_cast<const uint8_t*>(quads) + 4 * q, 4);
          }
          if constexpr (kFifth<Block>) {
            // Byte i: bit g is the fifth bit of value 4g + i (bit j of qh[4g + i]).
            for (int i = 0; i < 4; ++i) {
              uint8_t bits = 0;
              for (int q = 0; q < 8; ++q) {
                bits = static_cast<uint8_t>(bits | (((blk.qh[4 * q + i] >> j) & 1) << q));
              }
              o[kQ4KQsOffset + qs_stride * j + 256 + 4 * r + i] = bits;
            }
          }
        }
      }
    }
  }
}

template <class Block>
void deinterleave_k(const void* interleaved, int64_t cols, int64_t row_begin, int64_t n_rows,
                    void* out) {
  const auto* src = static_cast<const uint8_t*>(interleaved);
  auto* blocks = static_cast<Block*>(out);
  const int64_t nb = cols / kQKK;
  const int64_t group_bytes = kFifth<Block> ? kQ5KGroupBytes : kQ4KGroupBytes;
  const int64_t qs_stride = kFifth<Block> ? kQ5KSubBlockBytes : 256;
  for (int64_t g = row_begin / kInterleaveRows; g < (row_begin + n_rows) / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* o = src + (g * nb + b) * group_bytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        Block& blk = blocks[(g * kInterleaveRows + r - row_begin) * nb + b];
        std::memcpy(&blk.d, o + 2 * r, 2);
        std::memcpy(&blk.dmin, o + kQ4KDminOffset + 2 * r, 2);
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; ++j) {
          const uint8_t s = o[kQ4KScalesOffset + 16 * j + r];
          const uint8_t lo = o[kQ4KMinsOffset + 32 * (j / 4) + 2 * r + j % 2];
          sc[j] = s & 63;
          m[j] = static_cast<uint8_t>(((s >> 6) << 4) | ((j / 2) % 2 == 0 ? lo & 0x0F : lo >> 4));
        }
        pack_scales_mins(sc, m, blk.scales);
        for (int j = 0; j < 8; ++j) {
          for (int q = 0; q < 4; ++q) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = o[kQ4KQsOffset + qs_stride * j + 64 * q + 4 * r + i];
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
        if constexpr (kFifth<Block>) {
          std::memset(blk.qh, 0, sizeof(blk.qh));
          for (int j = 0; j < 8; ++j) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t bits = o[kQ4KQsOffset + qs_stride * j + 256 + 4 * r + i];
              for (int q = 0; q < 8; ++q) {
                blk.qh[4 * q + i] =
                    static_cast<uint8_t>(blk.qh[4 * q + i] | (((bits >> q) & 1) << j));
              }
            }
          }
        }
      }
    }
  }
}

// Sets Q6_K level v (0..255, 6 bits) of a rows-layout block: v = 128h + 32s
// + l keeps bits 0-3 in ql[64h + l + 32 (s & 1)] (low nibble for s < 2, else
// high) and bits 4-5 in bits 2s of qh[32h + l].
void set_q6_k_level(BlockQ6_K& b, int v, uint8_t level) {
  const int h = v / 128, s = (v % 128) / 32, l = v % 32;
  uint8_t& low_byte = b.ql[64 * h + l + 32 * (s & 1)];
  low_byte = s < 2 ? static_cast<uint8_t>((low_byte & 0xF0) | (level & 0x0F))
                   : static_cast<uint8_t>((low_byte & 0x0F) | ((level & 0x0F) << 4));
  uint8_t& high = b.qh[32 * h + l];
  high = static_cast<uint8_t>((high & ~(3 << (2 * s))) | (((level >> 4) & 3) << (2 * s)));
}

void interleave_q6_k(const void* rows_layout, int64_t rows, int64_t cols, void* out) {
  const auto* blocks = static_cast<const BlockQ6_K*>(rows_layout);
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t nb = cols / kQKK;
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = dst + (g * nb + b) * kQ6KGroupBytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        const BlockQ6_K& blk = blocks[(g * kInterleaveRows + r) * nb + b];
        std::memcpy(o + 2 * r, &blk.d, 2);
        // The 256 levels as bytes, 8 per word (v = 128h + 32s + l: ql's low
        // or high nibbles, qh's bit pair s), then each sub-block's 16 into
        // ql / qh bytes -- word arithmetic, not a loop per value (which made
        // loading the medium Q4_K_M file ~0.4 s slower).
        constexpr uint64_t kLow4 = 0x0F0F0F0F0F0F0F0FULL, kLow2 = 0x0303030303030303ULL;
        uint8_t levels[kQKK];
        for (int h = 0; h < 2; ++h) {
          for (int part = 0; part < 4; ++part) {
            uint64_t lo[4], hi[4];
            std::memcpy(lo, blk.ql + 64 * h + 32 * (part & 1), 32);
            std::memcpy(hi, blk.qh + 32 * h, 32);
            for (int w = 0; w < 4; ++w) {
              lo[w] =
                  ((lo[w] >> (part < 2 ? 0 : 4)) & kLow4) | (((hi[w] >> (2 * part)) & kLow2) << 4);
            }
            std::memcpy(levels + 128 * h + 32 * part, lo, 32);
          }
        }
        for (int s = 0; s < 16; ++s) {
          std::memcpy(o + kQ6KScalesOffset + 32 * (s / 2) + 2 * r + s % 2, &blk.scales[s], 1);
          uint64_t first, second;  // values 0-7 and 8-15 of sub-block s
          std::memcpy(&first, levels + 16 * s, 8);
          std::memcpy(&second, levels + 16 * s + 8, 8);
          // Byte i of half k: value 4k + i low, 8 + 4k + i high.
          const uint64_t ql = (first & kLow4) | ((second & kLow4) << 4);
          // Byte i: bit pair q is value 4q + i's bits 4-5.
          const uint64_t ha = (first >> 4) & kLow2, hb = (second >> 4) & kLow2;
          const auto qh = static_cast<uint32_t>((ha & 0xFFFFFFFFU) | ((ha >> 32) << 2) |
                                                ((hb & 0xFFFFFFFFU) << 4) | ((hb >> 32) << 6));
          uint8_t* sub = o + kQ6KLevelsOffset + kQ6KSubBlockBytes * s;
          std::memcpy(sub + 4 * r, &ql, 4);
          std::memcpy(sub + 64 + 4 * r, reinterpret_cast<const uint8_t*>(&ql) + 4, 4);
          std::memcpy(sub + 128 + 4 * r, &qh, 4);
        }
      }
    }
  }
}

void deinterleave_q6_k(const void* interleaved, int64_t cols, int64_t row_begin, int64_t n_rows,
                       void* out) {
  const auto* src = static_cast<const uint8_t*>(interleaved);
  auto* blocks = static_cast<BlockQ6_K*>(out);
  const int64_t nb = cols / kQKK;
  for (int64_t g = row_begin / kInterleaveRows; g < (row_begin + n_rows) / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* o = src + (g * nb + b) * kQ6KGroupBytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        BlockQ6_K& blk = blocks[(g * kInterleaveRows + r - row_begin) * nb + b];
        std::memcpy(&blk.d, o + 2 * r, 2);
        for (int s = 0; s < 16; ++s) {
          std::memcpy(&blk.scales[s], o + kQ6KScalesOffset + 32 * (s / 2) + 2 * r + s % 2, 1);
          for (int i = 0; i < 4; ++i) {
            const uint8_t high = o[kQ6KLevelsOffset + kQ6KSubBlockBytes * s + 128 + 4 * r + i];
            for (int k = 0; k < 2; ++k) {
              const uint8_t byte = o[kQ6KLevelsOffset + kQ6KSubBlockBytes * s + 64 * k + 4 * r + i];
              const int lo_v = 4 * k + i, hi_v = 8 + 4 * k + i;
              set_q6_k_level(
                  blk, 16 * s + lo_v,
                  static_cast<uint8_t>((byte & 0x0F) | (((high >> (2 * (lo_v / 4))) & 3) << 4)));
              set_q6_k_level(
                  blk, 16 * s + hi_v,
                  static_cast<uint8_t>((byte >> 4) | (((high >> (2 * (hi_v / 4))) & 3) << 4)));
            }
          }
        }
      }
    }
  }
}

// Q8_0: value 2k + e of row r's block goes to [k][r][e] of its column.
void interleave_q8_0(const void* rows_layout, int64_t rows, int64_t cols, void* out) {
  const auto* blocks = static_cast<const BlockQ8_0*>(rows_layout);
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t nb = cols / kQK;
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = dst + (g * nb + b) * kQ8GroupBytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        const BlockQ8_0& blk = blocks[(g * kInterleaveRows + r) * nb + b];
        std::memcpy(o + 2 * r, &blk.d, 2);
        for (int k = 0; k < kQK / 2; ++k) std::memcpy(o + 32 + 32 * k + 2 * r, &blk.qs[2 * k], 2);
      }
    }
  }
}

void deinterleave_q8_0(const void* interleaved, int64_t cols, int64_t row_begin, int64_t n_rows,
                       void* out) {
  const auto* src = static_cast<const uint8_t*>(interleaved);
  auto* blocks = static_cast<BlockQ8_0*>(out);
  const int64_t nb = cols / kQK;
  for (int64_t g = row_begin / kInterleaveRows; g < (row_begin + n_rows) / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* o = src + (g * nb + b) * kQ8GroupBytes;
      for (int r = 0; r < kInterleaveRows; ++r) {
        BlockQ8_0& blk = blocks[(g * kInterleaveRows + r - row_begin) * nb + b];
        std::memcpy(&blk.d, o + 2 * r, 2);
        for (int k = 0; k < kQK / 2; ++k) std::memcpy(&blk.qs[2 * k], o + 32 + 32 * k + 2 * r, 2);
      }
    }
  }
}

// BF16: a pair of columns of 16 rows is one 64-byte unit, [r][e]; a pair
// is moved as 4 bytes.
void interleave_bf16(const void* rows_layout, int64_t rows, int64_t cols, void* out) {
  const auto* src = static_cast<const uint8_t*>(rows_layout);
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t pairs = cols / 2;
  for (int64_t g = 0; g < rows / kInterleaveRows; ++g) {
    for (int64_t r = 0; r < kInterleaveRows; ++r) {
      const uint8_t* row = src + (g * kInterleaveRows + r) * pairs * 4;
      uint8_t* o = dst + (g * kInterleaveRows * pairs + r) * 4;
      for (int64_t p = 0; p < pairs; ++p) std::memcpy(o + p * kInterleaveRows * 4, row + p * 4, 4);
    }
  }
}

void deinterleave_bf16(const void* interleaved, int64_t cols, int64_t row_begin, int64_t n_rows,
                       void* out) {
  const auto* src = static_cast<const uint8_t*>(interleaved);
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t pairs = cols / 2;
  for (int64_t r = row_begin; r < row_begin + n_rows; ++r) {
    const uint8_t* in =
        src + ((r / kInterleaveRows) * kInterleaveRows * pairs + r % kInterleaveRows) * 4;
    uint8_t* row = dst + (r - row_begin) * pairs * 4;
    for (int64_t p = 0; p < pairs; ++p) std::memcpy(row + p * 4, in + p * kInterleaveRows * 4, 4);
  }
}

}  // namespace

void interleave_matrix(WeightType type, const void* rows_layout, int64_t rows, int64_t cols,
                       void* out) {
  if (type == WeightType::kBF16) return interleave_bf16(rows_layout, rows, cols, out);
  if (type == WeightType::kQ8_0) return interleave_q8_0(rows_layout, rows, cols, out);
  if (type == WeightType::kQ6_K) return interleave_q6_k(rows_layout, rows, cols, out);
  if (type == WeightType::kQ5_K) return interleave_k<BlockQ5_K>(rows_layout, rows, cols, out);
  interleave_k<BlockQ4_K>(rows_layout, rows, cols, out);
}

void deinterleave_rows(WeightType type, const void* interleaved, int64_t cols, int64_t row_begin,
                       int64_t n_rows, void* out) {
  if (type == WeightType::kBF16)
    return deinterleave_bf16(interleaved, cols, row_begin, n_rows, out);
  if (type == WeightType::kQ8_0) {
    return deinterleave_q8_0(interleaved, cols, row_begin, n_rows, out);
  }
  if (type == WeightType::kQ6_K) {
    return deinterleave_q6_k(interleaved, cols, row_begin, n_rows, out);
  }
  if (type == WeightType::kQ5_K) {
    return deinterleave_k<BlockQ5_K>(interleaved, cols, row_begin, n_rows, out);
  }
  deinterleave_k<BlockQ4_K>(interleaved, cols, row_begin, n_rows, out);
}

bool can_interleave(WeightType type, int64_t rows, int64_t cols) {
  if (type == WeightType::kBF16) {
    return rows > 0 && rows % kInterleaveRows == 0 && cols > 0 && cols % 2 == 0;
  }
  if (type == WeightType::kQ8_0) {
    return rows > 0 && rows % kInterleaveRows == 0 && cols > 0 && cols % kQK == 0;
  }
  return (type == WeightType::kQ4_K || type == WeightType::kQ5_K || type == WeightType::kQ6_K) &&
         rows > 0 && rows % kInterleaveRows == 0 && cols > 0 && cols % kQKK == 0;
}

int64_t weight_view_bytes(const WeightView& w) { return w.rows * weight_row_bytes(w.type, w.cols); }

void copy_as_rows(const WeightView& w, void* out) {
  if (w.layout == WeightLayout::kInterleaved16) {
    deinterleave_rows(w.type, w.data, w.cols, 0, w.rows, out);
  } else {
    std::memcpy(out, w.data, static_cast<size_t>(weight_view_bytes(w)));
  }
}

template <typename X>
void matmul_deinterleaved(const MatmulArgs& args, const X* x,
                          void (*rows_fn)(const MatmulArgs& args, const X* x)) {
  // 64 rows at a time: the rows kernels' chunks (16 rows) stay whole.
  constexpr int64_t kStep = 4 * kInterleaveRows;
  const int64_t row_bytes = weight_row_bytes(args.w.type, args.w.cols);
  thread_local std::vector<uint8_t> rows;
  rows.resize(static_cast<size_t>(kStep * row_bytes));
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kStep) {
    const int64_t n = std::min(kStep, args.row_end - r0);
    deinterleave_rows(args.w.type, args.w.data, args.w.cols, r0, n, rows.data());
    MatmulArgs chunk = args;
    chunk.w = WeightView{rows.data(), args.w.type, n, args.w.cols, WeightLayout::kRows};
    chunk.y = args.y + r0;
    chunk.row_begin = 0;
    chunk.row_end = n;
    rows_fn(chunk, x);
  }
}

template void matmul_deinterleaved<void>(const MatmulArgs&, const void*,
                                         void (*)(const MatmulArgs&, const void*));
template void matmul_deinterleaved<float>(const MatmulArgs&, const float*,
                                          void (*)(const MatmulArgs&, const float*));
template void matmul_deinterleaved<uint16_t>(const MatmulArgs&, const uint16_t*,
                                             void (*)(const MatmulArgs&, const uint16_t*));

}  // namespace dancemoe::kernels
