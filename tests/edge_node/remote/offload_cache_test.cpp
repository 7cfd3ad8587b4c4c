#include "edge_node/remote/offload_cache.h"

#include <doctest/doctest.h>

#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {

TEST_CASE("offload cache: bounded by its capacity, least recently used evicted first") {
  test_support::TinyModel model;
  const uint64_t one = model.checkpoint->expert_bytes(0, 0);
  OffloadCache cache(*model.checkpoint, 2 * one);
  auto a = cache.get_or_load({0, 0});
  auto b = cache.get_or_load({0, 1});
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK(cache.loads() == 2);
  REQUIRE(cache.get_or_load({0, 0}).is_ok());  // a is now the most recent
  CHECK(cache.hits() == 1);
  REQUIRE(cache.get_or_load({0, 2}).is_ok());  // evicts b
  CHECK(cache.resident_bytes() <= 2 * one);
  CHECK(cache.loads() == 3);
  REQUIRE(cache.get_or_load({0, 0}).is_ok());
  CHECK(cache.hits() == 2);  // a survived
  REQUIRE(cache.get_or_load({0, 1}).is_ok());
  CHECK(cache.loads() == 4);  // b had been evicted
  // The weights handed out earlier stay valid after eviction (shared_ptr).
  CHECK((*b)->n_bytes == one);
}

TEST_CASE(
    "offload cache: an expert larger than the cache is resource_exhausted, bad keys invalid") {
  test_support::TinyModel model;
  OffloadCache tiny(*model.checkpoint, 100);
  auto r = tiny.get_or_load({0, 0});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kResourceExhausted);
  CHECK(r.status().message().find("--offload-cache") != std::string::npos);
  OffloadCache cache(*model.checkpoint, 1 << 20);
  CHECK(cache.get_or_load({1, 0}).status().code() == StatusCode::kInvalidArgument);  // dense layer
}

}  // namespace dancemoe::node
