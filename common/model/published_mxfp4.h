// gpt-oss's published MXFP4 layout <-> the MXFP4 blocks the kernels compute
// with (GGUF's, kernels/cpu/mxfp4_block.h). The values and exponents are
// the same; only their placement differs:
//
//   published (HF safetensors, U8):  blocks [..., n_blocks, 16]: byte k holds
//     value 2k in its low nibble and value 2k + 1 in its high one;
//     scales [..., n_blocks]: the E8M0 byte of each block of 32 values;
//     value = E2M1(code) x 2^(scale - 127)
//   GGUF block_mxfp4 (17 bytes):     e, then qs[16]: byte j holds value j in
//     its low nibble and value j + 16 in its high one;
//     value = (2 x E2M1(code)) x 2^(e - 128)  -- the same number, e == scale
//
// So a block converts by copying its exponent and moving nibbles. Pure
// functions; thread-safe.
#pragma once

#include <cstdint>

namespace dancemoe {

inline constexpr int kPublishedMxfp4BlockBytes = 16;  // codes of one block of 32 values

// n_blocks published blocks (16 bytes each) and their scales -> n_blocks GGUF
// MXFP4 blocks (17 bytes each) at `out`.
void mxfp4_from_published(const uint8_t* blocks, const uint8_t* scales, int64_t n_blocks,
                          uint8_t* out);
// The inverse: GGUF blocks -> published blocks and scales.
void mxfp4_to_published(const uint8_t* in, int64_t n_blocks, uint8_t* blocks, uint8_t* scales);

}  // namespace dancemoe
