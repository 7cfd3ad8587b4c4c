#include "edge_node/remote/wire_tensor.h"

#include <doctest/doctest.h>

#include <cmath>

#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {

TEST_CASE("wire tensor: f32 round-trips exactly, bf16 within half an ulp of bf16") {
  const std::vector<float> x = test_support::random_hidden(5, 4099, 3);  // odd size: tails
  std::vector<uint8_t> f32, bf16;
  encode_rows(x.data(), 5, 4099, DType::kF32, &f32);
  encode_rows(x.data(), 5, 4099, DType::kBF16, &bf16);
  CHECK(f32.size() == x.size() * 4);
  CHECK(bf16.size() == x.size() * 2);
  std::vector<float> back(x.size());
  REQUIRE(decode_rows(f32, DType::kF32, static_cast<int64_t>(x.size()), back.data()).is_ok());
  CHECK(back == x);
  REQUIRE(decode_rows(bf16, DType::kBF16, static_cast<int64_t>(x.size()), back.data()).is_ok());
  float worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::fabs(back[i] - x[i]) / std::max(std::fabs(x[i]), 1e-30f));
  }
  CHECK(worst <= 1.0f / 256);  // 8 significant bits, round to nearest
  CHECK(worst > 0);
}

TEST_CASE("wire tensor: a frame of the wrong size is refused, not read past") {
  std::vector<uint8_t> bytes(10);
  std::vector<float> out(8);
  Status s = decode_rows(bytes, DType::kBF16, 8, out.data());
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("10 bytes") != std::string::npos);
}

}  // namespace dancemoe::node
