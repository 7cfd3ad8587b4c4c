#include "common/model/published_mxfp4.h"

#include "kernels/cpu/mxfp4_block.h"

namespace dancemoe {

void mxfp4_from_published(const uint8_t* blocks, const uint8_t* scales, int64_t n_blocks,
                          uint8_t* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* src = blocks + b * kPublishedMxfp4BlockBytes;
    uint8_t* dst = out + b * kernels::kMxfp4BlockBytes;
    dst[0] = scales[b];
    uint8_t codes[kernels::kMxfp4Values];
    for (int k = 0; k < kPublishedMxfp4BlockBytes; ++k) {
      codes[2 * k] = src[k] & 0xF;
      codes[2 * k + 1] = src[k] >> 4;
    }
    for (int j = 0; j < kernels::kMxfp4Values / 2; ++j) {
      dst[1 + j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
    }
  }
}

void mxfp4_to_published(const uint8_t* in, int64_t n_blocks, uint8_t* blocks, uint8_t* scales) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* src = in + b * kernels::kMxfp4BlockBytes;
    uint8_t* dst = blocks + b * kPublishedMxfp4BlockBytes;
    scales[b] = src[0];
    for (int k = 0; k < kPublishedMxfp4BlockBytes; ++k) {
      dst[k] = static_cast<uint8_t>(kernels::mxfp4_code(src + 1, 2 * k) |
                                    (kernels::mxfp4_code(src + 1, 2 * k + 1) << 4));
    }
  }
}

}  // namespace dancemoe
