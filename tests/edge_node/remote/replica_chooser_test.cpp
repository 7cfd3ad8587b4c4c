#include "edge_node/remote/replica_chooser.h"

#include <doctest/doctest.h>

namespace dancemoe::node {
namespace {

constexpr uint64_t kBytesPerToken = 2 * 64 * 2;

}  // namespace

TEST_CASE("replica choice: an expert with one holder goes to it -- one with none gets -1") {
  const std::vector<int32_t> tokens = {0};
  const std::vector<int32_t> only1 = {1};
  const std::vector<int32_t> none = {};
  std::vector<ExpertDemand> demands = {{3, tokens, only1}, {4, tokens, none}};
  std::vector<PeerCost> peers(2);
  const std::vector<int32_t> choice = choose_replicas(demands, peers, 1, kBytesPerToken);
  CHECK(choice == std::vector<int32_t>{1, -1});
}

TEST_CASE("replica choice: prefers a destination already in use (fewer messages)") {
  // Decode-sized calls (transfers dominate: 150 us per call, 20 us per
  // pair). Expert 0 only on peer 2; expert 1 on peers 0, 1 and 2, all
  // equally fast: expert 1 joins the call already going to peer 2.
  const std::vector<int32_t> tokens = {0};
  const std::vector<int32_t> only2 = {2};
  const std::vector<int32_t> all = {0, 1, 2};
  std::vector<ExpertDemand> demands = {{0, tokens, only2}, {1, tokens, all}};
  std::vector<PeerCost> peers(3, PeerCost{true, 150, 0.001, 20, 0});
  CHECK(choose_replicas(demands, peers, 1, kBytesPerToken) == std::vector<int32_t>{2, 2});
  // Several flexible experts all end up on one destination too.
  std::vector<ExpertDemand> flexible = {
      {0, tokens, all}, {1, tokens, all}, {2, tokens, all}, {3, tokens, all}};
  const std::vector<int32_t> choice = choose_replicas(flexible, peers, 1, kBytesPerToken);
  CHECK(choice[0] == choice[1]);
  CHECK(choice[1] == choice[2]);
  CHECK(choice[2] == choice[3]);
}

TEST_CASE(
    "replica choice: a measured slow peer loses to a fast one -- load is spread when it pays") {
  const std::vector<int32_t> tokens = {0};
  const std::vector<int32_t> both = {0, 1};
  std::vector<PeerCost> peers(2);
  peers[0].overhead_us = 5000;  // slow link
  peers[1].overhead_us = 100;
  std::vector<ExpertDemand> demands = {{5, tokens, both}};
  CHECK(choose_replicas(demands, peers, 1, kBytesPerToken) == std::vector<int32_t>{1});

  // Compute-heavy experts (many tokens each) on two equal peers: the second
  // goes to the other peer because running in parallel halves the layer time.
  std::vector<int32_t> many(512);
  for (int32_t t = 0; t < 512; ++t) many[static_cast<size_t>(t)] = t;
  std::vector<PeerCost> equal(2);
  equal[0].us_per_pair = equal[1].us_per_pair = 50;
  std::vector<ExpertDemand> heavy = {{0, many, both}, {1, many, both}};
  const std::vector<int32_t> split = choose_replicas(heavy, equal, 512, kBytesPerToken);
  CHECK(split[0] != split[1]);
}

TEST_CASE("replica choice: peers in back-off are used only when nobody else holds the expert") {
  const std::vector<int32_t> tokens = {0, 1};
  const std::vector<int32_t> both = {0, 1};
  const std::vector<int32_t> only0 = {0};
  std::vector<PeerCost> peers(2);
  peers[0].usable = false;
  std::vector<ExpertDemand> demands = {{1, tokens, both}, {2, tokens, only0}};
  CHECK(choose_replicas(demands, peers, 2, kBytesPerToken) == std::vector<int32_t>{1, 0});
}

TEST_CASE("replica choice: deterministic -- ties go to the lower peer index") {
  const std::vector<int32_t> tokens = {0};
  const std::vector<int32_t> holders = {3, 1, 2};
  std::vector<PeerCost> peers(4);
  std::vector<ExpertDemand> demands = {{0, tokens, holders}};
  for (int i = 0; i < 3; ++i) {
    CHECK(choose_replicas(demands, peers, 1, kBytesPerToken) == std::vector<int32_t>{1});
  }
}

}  // namespace dancemoe::node
