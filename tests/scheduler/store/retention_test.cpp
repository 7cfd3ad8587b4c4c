// Retention with roll-up: totals and counts survive, only resolution is lost.
#include "scheduler/store/retention.h"

#include <doctest/doctest.h>

#include <random>

#include "tests/support/paths.h"

namespace dancemoe::store {
namespace {

constexpr int64_t kHour = 3600 * 1000;

CountIndex index_2x4() {
  CountIndex index;
  index.layer_offset = {0, 4};
  index.layer_experts = {4, 4};
  index.n_total = 8;
  return index;
}

}  // namespace

TEST_CASE("retention: rolls old reports into buckets without losing counts or totals") {
  testing::TempDir dir("retention");
  auto opened = Store::open((dir.path() / "s.db").string());
  REQUIRE(opened.is_ok());
  Store& s = **opened;
  std::mt19937 rng(3);
  const int64_t t0 = 100 * kHour;
  std::vector<ReportRecord> sent;
  uint64_t sequence = 0;
  for (int64_t t = t0; t < t0 + 3 * kHour; t += 60'000) {
    for (const char* node : {"a", "b"}) {
      ReportRecord r;
      r.node_id = node;
      r.sequence = ++sequence;
      r.window_start_ms = t - 60'000;
      r.window_end_ms = t;
      r.received_ms = t;
      r.tokens = 50 + rng() % 50;
      r.requests = 1;
      for (uint16_t l = 0; l < 2; ++l) {
        for (uint16_t e = 0; e < 4; ++e) {
          const uint64_t c = rng() % 20;
          if (c > 0) r.counts.push_back({l, e, c});
          r.activations += c;
        }
      }
      r.local_hits = r.activations / 3;
      r.local_calls = 5;
      r.local_mean_us = 80.0 + rng() % 40;
      r.peers.push_back({node == std::string("a") ? "b" : "a", 3, 250.0, 400.0, 100, 1});
      REQUIRE(*s.insert_report(r) == InsertOutcome::kStored);
      sent.push_back(r);
    }
  }
  const auto counts_before = *s.counts_since(0, index_2x4());
  const auto totals_before = *s.totals_since(0);
  const int64_t raw_before = s.db().query_int("SELECT count(*) FROM reports")->value_or(0);

  RetentionPolicy policy;
  policy.raw_retention_ms = kHour;
  policy.bucket_ms = kHour;
  policy.batch_reports = 50;  // several batches
  const int64_t now = t0 + 3 * kHour;
  int passes = 0;
  while (true) {
    auto stats = Retention::apply(s, policy, now);
    REQUIRE(stats.is_ok());
    ++passes;
    if (!stats->more) break;
  }
  CHECK(passes > 2);
  const int64_t raw_after = s.db().query_int("SELECT count(*) FROM reports")->value_or(0);
  CHECK(raw_after < raw_before / 2);
  CHECK(*s.db().query_int("SELECT count(*) FROM report_peers") == raw_after);
  CHECK(*s.db().query_int("SELECT count(*) FROM rollups") == 4);  // 2 nodes x 2 hours

  CHECK(*s.counts_since(0, index_2x4()) == counts_before);
  const auto totals_after = *s.totals_since(0);
  for (const char* node : {"a", "b"}) {
    const NodeTotals& before = totals_before.at(node);
    const NodeTotals& after = totals_after.at(node);
    CHECK(after.n_reports == before.n_reports);
    CHECK(after.tokens == before.tokens);
    CHECK(after.activations == before.activations);
    CHECK(after.local_hits == before.local_hits);
    CHECK(after.local_latency_sum_us == doctest::Approx(before.local_latency_sum_us));
    CHECK(after.remote_calls == before.remote_calls);
    CHECK(after.remote_latency_sum_us == doctest::Approx(before.remote_latency_sum_us));
    REQUIRE(after.peers.size() == 1);
    CHECK(after.peers.begin()->second.calls == before.peers.begin()->second.calls);
  }
  // A window starting inside a rolled-up hour includes that whole bucket.
  CHECK(s.totals_since(t0 + kHour + 1)->at("a").n_reports >=
        s.totals_since(t0 + 2 * kHour)->at("a").n_reports);

  // A report rolled up and then resent is stale, not counted twice.
  CHECK(*s.insert_report(sent.front()) == InsertOutcome::kStale);
  CHECK(*s.counts_since(0, index_2x4()) == counts_before);

  // The watermark survives a reopen.
  opened->reset();
  auto reopened = Store::open((dir.path() / "s.db").string());
  REQUIRE(reopened.is_ok());
  CHECK(*(*reopened)->insert_report(sent.front()) == InsertOutcome::kStale);

  // Past the roll-up retention everything old goes.
  policy.rollup_retention_ms = kHour / 2;
  REQUIRE(Retention::apply(**reopened, policy, now + 10 * kHour).is_ok());
  CHECK(*(*reopened)->db().query_int("SELECT count(*) FROM rollups") == 0);
}

}  // namespace dancemoe::store
