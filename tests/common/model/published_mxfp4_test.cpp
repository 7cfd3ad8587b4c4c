#include "common/model/published_mxfp4.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace dancemoe {
namespace {

TEST_CASE("published mxfp4: a block converts both ways and keeps every value") {
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t n_blocks = 9;
  std::vector<uint8_t> blocks(static_cast<size_t>(n_blocks * 16)), scales(n_blocks);
  for (uint8_t& b : blocks) b = static_cast<uint8_t>(byte(rng));
  for (uint8_t& s : scales) s = static_cast<uint8_t>(100 + byte(rng) % 50);
  std::vector<uint8_t> ggml(static_cast<size_t>(n_blocks * 17));
  mxfp4_from_published(blocks.data(), scales.data(), n_blocks, ggml.data());
  std::vector<float> values(static_cast<size_t>(n_blocks * 32));
  kernels::dequantize_values(kernels::WeightType::kMXFP4, ggml.data(), n_blocks * 32,
                             values.data());
  static const float kE2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  int mismatches = 0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t i = 0; i < 32; ++i) {
      const uint8_t code_byte = blocks[static_cast<size_t>(b * 16 + i / 2)];
      const int code = i % 2 == 0 ? (code_byte & 15) : (code_byte >> 4);
      const float magnitude = std::ldexp(kE2m1[code & 7], scales[static_cast<size_t>(b)] - 127);
      const float want = (code & 8) ? -magnitude : magnitude;
      if (values[static_cast<size_t>(b * 32 + i)] != want) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
  std::vector<uint8_t> blocks_back(blocks.size()), scales_back(scales.size());
  mxfp4_to_published(ggml.data(), n_blocks, blocks_back.data(), scales_back.data());
  CHECK(blocks_back == blocks);
  CHECK(scales_back == scales);
}

}  // namespace
}  // namespace dancemoe
