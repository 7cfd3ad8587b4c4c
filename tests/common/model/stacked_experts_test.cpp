// gpt-oss's published stacked experts seen as per-expert tensors: each view
// reads back exactly the rows (gate: even, up: odd) and bias elements the
// published tensors hold for that expert, decoded here from the published
// layout by its own definition; sizes are the MXFP4 bytes; a stacked tensor
// that is missing or of the wrong shape is named.
#include "common/model/stacked_experts.h"

#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/base/file_util.h"
#include "common/model/checkpoint.h"
#include "common/model/synthetic/synthetic_model.h"
#include "kernels/cpu/numeric.h"
#include "kernels/quantize.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

SyntheticModelSpec gpt_oss_tiny() {
  SyntheticModelSpec spec;
  spec.arch = "gpt_oss";
  spec.preset = "tiny";
  spec.seed = 3;
  spec.write_tokenizer = false;
  return spec;
}

std::vector<uint8_t> read_raw(const Checkpoint& ckpt, const std::string& name) {
  const TensorLocation* t = ckpt.find(name);
  REQUIRE(t != nullptr);
  std::vector<uint8_t> bytes(t->n_bytes);
  REQUIRE(ckpt.read_tensor(*t, bytes.data()).is_ok());
  return bytes;
}

// Row `row` ([cols] values) of a published MXFP4 matrix: byte k of a
// 16-byte block holds value 2k (low nibble) and 2k + 1 (high), E2M1 codes;
// the block's scale byte s gives 2^(s - 127).
std::vector<float> published_row(const std::vector<uint8_t>& blocks,
                                 const std::vector<uint8_t>& scales, int64_t row, int64_t cols) {
  static const float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const int64_t n_blocks = cols / 32;
  std::vector<float> out(static_cast<size_t>(cols));
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* codes = blocks.data() + (row * n_blocks + b) * 16;
    const int s = scales[static_cast<size_t>(row * n_blocks + b)];
    for (int k = 0; k < 16; ++k) {
      out[static_cast<size_t>(b * 32 + 2 * k)] = std::ldexp(kE2m1[codes[k] & 15], s - 127);
      out[static_cast<size_t>(b * 32 + 2 * k + 1)] = std::ldexp(kE2m1[codes[k] >> 4], s - 127);
    }
  }
  return out;
}

TEST_CASE("stacked experts: each expert's views are its rows of the published tensors") {
  testing::TempDir tmp("gpt_oss_views");
  testing::write_model(gpt_oss_tiny(), tmp.path());
  auto ckpt = Checkpoint::open(tmp.path());
  REQUIRE(ckpt.is_ok());
  const ModelConfig& c = (*ckpt)->config();
  const int64_t inter = c.moe_intermediate_size, hidden = c.hidden_size;
  const int64_t layer = 1, expert = 5;
  const std::string p = "model.layers.1.mlp.experts.";
  const std::vector<uint8_t> gu_blocks = read_raw(**ckpt, p + "gate_up_proj_blocks");
  const std::vector<uint8_t> gu_scales = read_raw(**ckpt, p + "gate_up_proj_scales");
  const std::vector<uint8_t> d_blocks = read_raw(**ckpt, p + "down_proj_blocks");
  const std::vector<uint8_t> d_scales = read_raw(**ckpt, p + "down_proj_scales");
  const std::vector<uint8_t> gu_bias = read_raw(**ckpt, p + "gate_up_proj_bias");

  CHECK((*ckpt)->expert_type() == kernels::WeightType::kMXFP4);
  CHECK((*ckpt)->expert_bytes(layer, expert) ==
        static_cast<uint64_t>((2 * inter * hidden + hidden * inter) / 32 * 17));

  struct Case {
    TensorRole role;
    const std::vector<uint8_t>* blocks;
    const std::vector<uint8_t>* scales;
    int64_t stored_rows, first, step, cols;
  };
  const Case cases[] = {
      {TensorRole::kExpertGate, &gu_blocks, &gu_scales, 2 * inter, 0, 2, hidden},
      {TensorRole::kExpertUp, &gu_blocks, &gu_scales, 2 * inter, 1, 2, hidden},
      {TensorRole::kExpertDown, &d_blocks, &d_scales, hidden, 0, 1, inter},
  };
  int mismatches = 0;
  for (const Case& k : cases) {
    const TensorLocation& t = (*ckpt)->tensor(k.role, layer, expert);
    CHECK(t.type == kernels::WeightType::kMXFP4);
    std::vector<uint8_t> bytes(t.n_bytes);
    REQUIRE((*ckpt)->read_tensor(t, bytes.data()).is_ok());
    const int64_t rows = t.shape[0];
    std::vector<float> got(static_cast<size_t>(rows * k.cols));
    kernels::dequantize_values(kernels::WeightType::kMXFP4, bytes.data(), rows * k.cols,
                               got.data());
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> want = published_row(
          *k.blocks, *k.scales, expert * k.stored_rows + k.first + k.step * r, k.cols);
      for (int64_t col = 0; col < k.cols; ++col) {
        if (got[static_cast<size_t>(r * k.cols + col)] != want[static_cast<size_t>(col)]) {
          ++mismatches;
        }
      }
    }
  }
  CHECK(mismatches == 0);

  // Biases: the expert's even (gate) and odd (up) elements of gate_up_proj_bias.
  for (int half = 0; half < 2; ++half) {
    const TensorLocation& t = (*ckpt)->tensor(
        half == 0 ? TensorRole::kExpertGateBias : TensorRole::kExpertUpBias, layer, expert);
    std::vector<uint8_t> bytes(t.n_bytes);
    REQUIRE((*ckpt)->read_tensor(t, bytes.data()).is_ok());
    for (int64_t i = 0; i < inter; ++i) {
      uint16_t got, want;
      std::memcpy(&got, bytes.data() + 2 * i, 2);
      std::memcpy(&want, gu_bias.data() + 2 * (expert * 2 * inter + 2 * i + half), 2);
      CHECK(got == want);
    }
  }
}

TEST_CASE("stacked experts: a missing or misshapen stacked tensor is named") {
  testing::TempDir tmp("gpt_oss_bad");
  testing::write_model(gpt_oss_tiny(), tmp.path());
  auto text = read_file(tmp.path() / "config.json");
  REQUIRE(text.is_ok());
  nlohmann::json config = nlohmann::json::parse(*text);
  {
    nlohmann::json bad = config;
    bad["intermediate_size"] = 96;
    REQUIRE(write_file(tmp.path() / "config.json", bad.dump()).is_ok());
    auto r = Checkpoint::open(tmp.path());
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find("model.layers.0.mlp.experts.gate_up_proj_blocks") !=
          std::string::npos);
    CHECK(r.status().message().find("config.json implies [8, 192, 2, 16]") != std::string::npos);
  }
  {
    nlohmann::json bad = config;
    bad["num_hidden_layers"] = 5;
    bad["layer_types"].push_back("sliding_attention");
    REQUIRE(write_file(tmp.path() / "config.json", bad.dump()).is_ok());
    auto r = Checkpoint::open(tmp.path());
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find("'model.layers.4.mlp.experts.gate_up_proj_blocks'") !=
          std::string::npos);
    CHECK(r.status().message().find("missing") != std::string::npos);
  }
}

}  // namespace
}  // namespace dancemoe
