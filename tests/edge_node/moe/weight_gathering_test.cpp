#include "edge_node/moe/weight_gathering.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <numeric>

namespace dancemoe::node {
namespace {

std::vector<int32_t> range(int32_t from, int32_t to) {
  std::vector<int32_t> out(static_cast<size_t>(to - from));
  std::iota(out.begin(), out.end(), from);
  return out;
}

// A 500 Mbit/s link (0.016 us per byte), 1 ms per call.
GatherPeer slow_link() { return {true, 1000.0, 0.016, 5.0}; }

GatherInputs inputs(int64_t n_tokens, uint64_t bytes_per_token) {
  GatherInputs in;
  in.n_tokens = n_tokens;
  in.bytes_per_token = bytes_per_token;
  in.local_us_per_pair = 5.0;
  in.cache_room_bytes = uint64_t{1} << 30;
  return in;
}

TEST_CASE("weight gathering: a long prompt's expert is fetched when its tokens cost more") {
  // 2000 tokens to one expert of a 2048-wide model: 16 MB of bf16 hidden
  // states both ways against 9.4 MB of weights.
  GatherInputs in = inputs(2000, 2 * 2 * 2048);
  in.peers = {slow_link()};
  in.candidates = {{3, 0, range(0, 2000), 3 * 2048 * 768 * 2, false}};
  const GatherChoice c = plan_gathering(in);
  REQUIRE(c.gather.size() == 1);
  CHECK(c.gather[0]);
  CHECK(c.weight_bytes == 3 * 2048 * 768 * 2);
  CHECK(c.activation_bytes_avoided == 2000u * 2 * 2 * 2048);
  CHECK(c.estimated_saving_us > 0);
}

TEST_CASE("weight gathering: a short prompt sends its tokens") {
  GatherInputs in = inputs(16, 2 * 2 * 2048);
  in.peers = {slow_link()};
  in.candidates = {{3, 0, range(0, 16), 3 * 2048 * 768 * 2, false}};
  const GatherChoice c = plan_gathering(in);
  CHECK_FALSE(c.gather[0]);
  CHECK(c.weight_bytes == 0);
  CHECK(c.activation_bytes_avoided == 0);
}

TEST_CASE("weight gathering: a cached expert is computed here, whatever the prompt") {
  GatherInputs in = inputs(4, 2 * 2 * 2048);
  in.peers = {GatherPeer{}};  // not even measured
  in.candidates = {{1, 0, range(0, 4), 1 << 20, true}, {2, 0, range(0, 4), 1 << 20, false}};
  const GatherChoice c = plan_gathering(in);
  CHECK(c.gather[0]);
  CHECK_FALSE(c.gather[1]);  // the peer's link is unmeasured: its call measures it
  CHECK(c.weight_bytes == 0);
  CHECK(c.activation_bytes_avoided == 0);  // expert 2 still needs those tokens sent
}

TEST_CASE("weight gathering: experts sharing tokens are gathered together when only that pays") {
  // Two experts of one peer see the same 1000 tokens (top-2): dropping one
  // saves no token, dropping both saves the call.
  GatherInputs in = inputs(1000, 2 * 2 * 1024);
  in.peers = {slow_link()};
  const uint64_t weights = 3 * 1024 * 64 * 2;  // 384 KB each, 4 MB of tokens
  in.candidates = {{0, 0, range(0, 1000), weights, false}, {1, 0, range(0, 1000), weights, false}};
  const GatherChoice c = plan_gathering(in);
  CHECK(c.gather[0]);
  CHECK(c.gather[1]);
  CHECK(c.activation_bytes_avoided == 1000u * 2 * 2 * 1024);
}

TEST_CASE("weight gathering: never more new weights per layer than the offload cache's room") {
  GatherInputs in = inputs(2000, 2 * 2 * 2048);
  in.peers = {slow_link(), slow_link()};
  const uint64_t weights = 3 * 2048 * 768 * 2;
  in.candidates = {{0, 0, range(0, 2000), weights, false}, {1, 1, range(0, 2000), weights, false}};
  in.cache_room_bytes = weights + 10;
  const GatherChoice c = plan_gathering(in);
  CHECK(c.gather[0] != c.gather[1]);  // one fits, not both
  CHECK(c.weight_bytes == weights);
  in.cache_room_bytes = weights - 1;  // none fits
  const GatherChoice none = plan_gathering(in);
  CHECK_FALSE(none.gather[0]);
  CHECK_FALSE(none.gather[1]);
}

TEST_CASE("weight gathering: a fast link keeps sending tokens") {
  GatherInputs in = inputs(2000, 2 * 2 * 2048);
  GatherPeer fast = slow_link();
  fast.us_per_byte = 0.0001;  // 10 GB/s
  in.peers = {fast};
  in.local_us_per_pair = 50.0;  // and this node computes slower than the peer
  in.candidates = {{3, 0, range(0, 2000), 3 * 2048 * 768 * 2, false}};
  CHECK_FALSE(plan_gathering(in).gather[0]);
}

}  // namespace
}  // namespace dancemoe::node
