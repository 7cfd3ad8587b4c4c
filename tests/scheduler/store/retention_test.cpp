// Retention with roll-up: totals and counts survive, only resolution is lost.
#include "scheduler/store/retention.h"

#include <doctest/doctest.h>

#include <random>

#include "tests/support/paths.h"

namespace dancemoe::store {
namespace {

constexpr int64_t kHour = 3600 * 1000;

CountIndex retention_index_2x4() {
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
  const auto counts_before = *s.counts_since(0, retention_index_2x4());
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

  CHECK(*s.counts_since(0, retention_index_2x4()) == counts_before);
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
  CHECK(*s.counts_since(0, retention_index_2x4()) == counts_before);

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

TEST_CASE("retention: roll-ups keep the co-activation pairs, summed, most above independence") {
  testing::TempDir dir("retention_pairs");
  auto opened = Store::open((dir.path() / "s.db").string());
  REQUIRE(opened.is_ok());
  Store& s = **opened;
  const int64_t t0 = 100 * kHour;
  uint64_t sequence = 0;
  // Node a, layer 0: pair (0, 1) always together; (2, 3) as often as chance
  // gives; layer 1: one pair (0, 3).
  for (int64_t t = t0; t < t0 + 2 * kHour; t += 10 * 60'000) {
    ReportRecord r;
    r.node_id = "a";
    r.sequence = ++sequence;
    r.window_start_ms = t - 60'000;
    r.window_end_ms = t;
    r.received_ms = t;
    r.tokens = 100;
    r.requests = 1;
    r.counts = {{0, 0, 40}, {0, 1, 40}, {0, 2, 50}, {0, 3, 50}, {1, 0, 10}, {1, 3, 10}};
    r.activations = 200;
    r.pairs = {{0, 0, 1, 40}, {0, 2, 3, 25}, {1, 0, 3, 10}};
    REQUIRE(*s.insert_report(r) == InsertOutcome::kStored);
  }
  const auto before = *s.pairs_since(0, retention_index_2x4());
  REQUIRE(before.at("a").size() == 3);
  CHECK(before.at("a").at({0, 1}) == 12 * 40);
  CHECK(before.at("a").at({4, 7}) == 12 * 10);

  RetentionPolicy policy;
  policy.raw_retention_ms = kHour / 2;
  policy.bucket_ms = kHour;
  const int64_t now = t0 + 2 * kHour;
  while (true) {
    auto stats = Retention::apply(s, policy, now);
    REQUIRE(stats.is_ok());
    if (!stats->more) break;
  }
  CHECK(*s.db().query_int("SELECT count(*) FROM rollups") >= 1);
  // Nothing lost while every pair fits.
  CHECK(*s.pairs_since(0, retention_index_2x4()) == before);

  // With one pair per layer a roll-up keeps, per layer, the pair most above
  // independence: (0, 1) (40 seen, 16 expected per report) over the more
  // frequent (2, 3) (45 seen, 81 expected).
  testing::TempDir dir2("retention_pairs_limit");
  auto opened2 = Store::open((dir2.path() / "s.db").string());
  REQUIRE(opened2.is_ok());
  Store& s2 = **opened2;
  for (int64_t t = t0, seq = 1; t < t0 + kHour; t += 10 * 60'000, ++seq) {
    ReportRecord r;
    r.node_id = "a";
    r.sequence = static_cast<uint64_t>(seq);
    r.window_start_ms = t - 60'000;
    r.window_end_ms = t;
    r.received_ms = t;
    r.tokens = 100;
    r.requests = 1;
    r.counts = {{0, 0, 40}, {0, 1, 40}, {0, 2, 90}, {0, 3, 90}, {1, 0, 10}, {1, 3, 10}};
    r.activations = 280;
    r.pairs = {{0, 0, 1, 40}, {0, 2, 3, 45}, {1, 0, 3, 10}};
    REQUIRE(*s2.insert_report(r) == InsertOutcome::kStored);
  }
  policy.rollup_pairs_per_layer = 1;
  REQUIRE(Retention::apply(s2, policy, t0 + 3 * kHour).is_ok());
  CHECK(*s2.db().query_int("SELECT count(*) FROM reports") == 0);
  const auto kept = *s2.pairs_since(0, retention_index_2x4());
  REQUIRE(kept.at("a").size() == 2);
  CHECK(kept.at("a").at({0, 1}) == 6 * 40);
  CHECK(kept.at("a").at({4, 7}) == 6 * 10);
}

}  // namespace dancemoe::store
