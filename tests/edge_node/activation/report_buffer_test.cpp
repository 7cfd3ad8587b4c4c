#include "edge_node/activation/report_buffer.h"

#include <doctest/doctest.h>

namespace dancemoe::node {
namespace {

proto::ActivationReport report(uint64_t tokens) {
  proto::ActivationReport r;
  r.tokens = tokens;
  return r;
}

}  // namespace

TEST_CASE("report buffer: unacked reports are resent after the interval with their sequence") {
  using namespace std::chrono_literals;
  ReportBuffer buffer(10);
  const ReportBuffer::Millis t0{1000};  // any steady reading
  buffer.push(5, report(1));
  buffer.push(6, report(2));
  auto first = buffer.due(t0, 2s);
  REQUIRE(first.size() == 2);
  CHECK(first[0].first == 5);
  CHECK(first[1].second.tokens == 2);
  CHECK(buffer.due(t0 + 1s, 2s).empty());  // sent, not yet due again
  CHECK(buffer.ack(5));
  CHECK_FALSE(buffer.ack(5));
  auto again = buffer.due(t0 + 2s, 2s);
  REQUIRE(again.size() == 1);
  CHECK(again[0].first == 6);  // same sequence: the scheduler stores it once
  buffer.mark_all_unsent();    // re-registered
  CHECK(buffer.due(t0 + 2s, 2s).size() == 1);
}

TEST_CASE("report buffer: bounded -- the oldest report is dropped and counted") {
  ReportBuffer buffer(3);
  for (uint64_t s = 1; s <= 5; ++s) buffer.push(s, report(s));
  CHECK(buffer.size() == 3);
  CHECK(buffer.dropped() == 2);
  auto due = buffer.due(ReportBuffer::Millis{0}, std::chrono::seconds(1));
  REQUIRE(due.size() == 3);
  CHECK(due.front().first == 3);
  CHECK(due.back().first == 5);
}

}  // namespace dancemoe::node
