// The rotary frequencies of each rope_scaling type against values from the
// independent reference (tests/fixtures/golden/reference_forward.py's
// rope_parameters, torch float32), printed with 9 significant digits.
#include "common/inference/rope.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace dancemoe {
namespace {

ModelConfig with_rope(double theta, int64_t dim, RopeScaling scaling) {
  ModelConfig c;
  c.rope_theta = theta;
  c.head_dim = dim;
  c.rope_scaling = scaling;
  return c;
}

void check_frequencies(const RopeFrequencies& got, const std::vector<double>& want, double factor) {
  REQUIRE(got.inv_freq.size() >= want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(got.inv_freq[i] == doctest::Approx(want[i]).epsilon(2e-6));
  }
  CHECK(got.attention_factor == doctest::Approx(factor).epsilon(1e-9));
}

}  // namespace

TEST_CASE("rope: YaRN ramps between interpolated and original frequencies, scales cos/sin") {
  RopeScaling yarn;
  yarn.type = RopeScaling::Type::kYarn;
  yarn.factor = 8.0;
  yarn.original_max_position_embeddings = 64;
  check_frequencies(rope_frequencies(with_rope(1e6, 16, yarn)),
                    {1, 0.100028217, 0.00395284733, 0.000702926656, 0.000125000006, 2.22284925e-05,
                     3.95284678e-06, 7.02926684e-07},
                    1.2079441541679836);
  // gpt-oss's: no truncation of the ramp's ends.
  yarn.factor = 32.0;
  yarn.original_max_position_embeddings = 4096;
  yarn.truncate = false;
  check_frequencies(rope_frequencies(with_rope(150000.0, 64, yarn)),
                    {1, 0.689044297, 0.47478205, 0.327145875, 0.225418001, 0.155322984, 0.107024424,
                     0.0737445652},
                    1.3465735902799727);
}

TEST_CASE("rope: YaRN with DeepSeek's mscale pair has no cos/sin factor") {
  RopeScaling yarn;
  yarn.type = RopeScaling::Type::kYarn;
  yarn.factor = 40.0;
  yarn.mscale = 0.707;
  yarn.mscale_all_dim = 0.707;
  yarn.original_max_position_embeddings = 4096;
  check_frequencies(rope_frequencies(with_rope(10000.0, 8, yarn)),
                    {1, 0.100000001, 0.00512499968, 2.49999994e-05}, 1.0);
}

TEST_CASE("rope: llama3 divides low frequencies, keeps high ones, blends between") {
  RopeScaling llama3;
  llama3.type = RopeScaling::Type::kLlama3;
  llama3.factor = 8.0;
  llama3.low_freq_factor = 1.0;
  llama3.high_freq_factor = 4.0;
  llama3.original_max_position_embeddings = 64;
  check_frequencies(rope_frequencies(with_rope(1e6, 16, llama3)),
                    {1, 0.0643098727, 0.00395284733, 0.000702926656, 0.000125000006, 2.22284925e-05,
                     3.95284678e-06, 7.02926684e-07},
                    1.0);
}

TEST_CASE("rope: linear divides every frequency and partial rotary uses the rotating dims") {
  RopeScaling linear;
  linear.type = RopeScaling::Type::kLinear;
  linear.factor = 4.0;
  ModelConfig c = with_rope(10000.0, 16, linear);
  c.rotary_dim = 8;
  const RopeFrequencies f = rope_frequencies(c);
  REQUIRE(f.inv_freq.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(f.inv_freq[i] ==
          doctest::Approx(std::pow(10000.0, -2.0 * static_cast<double>(i) / 8.0) / 4.0));
  }
  CHECK(f.attention_factor == 1.0);
}

}  // namespace dancemoe
