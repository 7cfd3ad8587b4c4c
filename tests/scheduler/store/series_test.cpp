// The dashboard's read-only queries (series.h) over a real store file, read
// through their own connection while the store keeps writing.
#include "scheduler/store/series.h"

#include <doctest/doctest.h>

#include "scheduler/store/retention.h"
#include "tests/support/paths.h"

namespace dancemoe::store {
namespace {

// A report of `node` received at `received_ms`: `activations` activations of
// which `hits` local, and `calls` remote calls to `peer` of `latency_us` each.
ReportRecord series_report(const std::string& node, uint64_t sequence, int64_t received_ms,
                           uint64_t activations, uint64_t hits, const std::string& peer,
                           uint64_t calls, double latency_us) {
  ReportRecord r;
  r.node_id = node;
  r.sequence = sequence;
  r.window_start_ms = received_ms - 500;
  r.window_end_ms = received_ms;
  r.received_ms = received_ms;
  r.tokens = activations / 2;
  r.requests = 1;
  r.activations = activations;
  r.local_hits = hits;
  r.counts = {{0, 1, activations - 1}, {1, 3, 1}};
  if (calls > 0) r.peers.push_back({peer, calls, latency_us, latency_us, calls * 100, 0});
  return r;
}

CountIndex two_layers_of_four() {
  CountIndex index;
  index.layer_offset = {0, 4};
  index.layer_experts = {4, 4};
  index.n_total = 8;
  return index;
}

// Starts and commits version `version` at `at_ms`, its migration moving `bytes`.
void commit_version(Store& s, uint64_t version, int64_t at_ms, uint64_t bytes) {
  PlacementRecord p;
  p.version = version;
  p.policy = "optimal";
  p.method = "m";
  p.trigger = version == 1 ? "cold_start" : "on_demand";
  p.state = "preparing";
  p.created_ms = at_ms - 10;
  p.nodes = {{"a", "tcp://a:1", {{"cpu", {{0, 1}}}}}};
  DecisionRecord d;
  d.trigger = p.trigger;
  d.outcome = "adopted";
  d.version = version;
  MigrationRecord m;
  m.from_version = version - 1;
  m.to_version = version;
  m.started_ms = at_ms - 10;
  m.bytes = bytes;
  m.outcome = "preparing";
  REQUIRE(s.start_placement(&d, &p, &m).is_ok());
  REQUIRE(s.commit_placement(version, m.id, at_ms).is_ok());
}

}  // namespace

TEST_CASE("series: per-node hit ratios, per-peer latency, bytes moved and versions by bucket") {
  testing::TempDir dir("series");
  const std::string path = (dir.path() / "s.db").string();
  auto opened = Store::open(path);
  REQUIRE(opened.is_ok());
  Store& s = **opened;
  // Bucket 0 [0, 1000): a 8 of 10 local, calls b twice at 100 us; b 1 of 4, calls a once at 400 us.
  REQUIRE(s.insert_report(series_report("a", 1, 100, 10, 8, "b", 2, 100.0)).is_ok());
  REQUIRE(s.insert_report(series_report("b", 1, 900, 4, 1, "a", 1, 400.0)).is_ok());
  // Bucket 2 [2000, 3000): a 5 of 5 local; b calls a 3 times at 200 us.
  REQUIRE(s.insert_report(series_report("a", 2, 2500, 5, 5, "", 0, 0.0)).is_ok());
  REQUIRE(s.insert_report(series_report("b", 2, 2999, 6, 3, "a", 3, 200.0)).is_ok());
  // Outside the range (bucket 4 of 4): left out.
  REQUIRE(s.insert_report(series_report("a", 3, 4000, 7, 7, "b", 1, 9.0)).is_ok());
  commit_version(s, 1, 50, 1000);
  commit_version(s, 2, 2100, 4096);

  auto reader = SeriesReader::open(path);
  REQUIRE(reader.is_ok());
  auto got = (*reader)->series({0, 1000, 4});
  REQUIRE(got.is_ok());
  const ClusterSeries& c = *got;
  REQUIRE(c.nodes.size() == 2);
  const NodeSeries& a = c.nodes.at("a");
  CHECK(a.activations == std::vector<uint64_t>{10, 0, 5, 0});
  CHECK(a.local_hits == std::vector<uint64_t>{8, 0, 5, 0});
  CHECK(a.remote_calls == std::vector<uint64_t>{2, 0, 0, 0});
  CHECK(a.remote_bytes == std::vector<uint64_t>{200, 0, 0, 0});
  CHECK(c.nodes.at("b").local_hits == std::vector<uint64_t>{1, 0, 3, 0});
  // Latency is per called peer over every caller: a was called by b only.
  REQUIRE(c.peers.count("a") == 1);
  CHECK(c.peers.at("a").calls == std::vector<uint64_t>{1, 0, 3, 0});
  CHECK(c.peers.at("a").latency_sum_us[2] == doctest::Approx(600.0));
  CHECK(c.peers.at("b").latency_sum_us[0] == doctest::Approx(200.0));
  CHECK(c.migration_bytes == std::vector<uint64_t>{1000, 0, 4096, 0});
  REQUIRE(c.placements.size() == 2);
  CHECK(c.placements[1].version == 2);
  CHECK(c.placements[1].committed_ms == 2100);
  CHECK(c.placements[1].trigger == "on_demand");

  auto committed = (*reader)->committed();
  REQUIRE(committed.is_ok());
  REQUIRE(committed->has_value());
  CHECK((*committed)->version == 2);

  // The reader sees what the writer commits after it opened.
  REQUIRE(s.insert_report(series_report("c", 1, 1500, 2, 2, "", 0, 0.0)).is_ok());
  auto again = (*reader)->series({0, 1000, 4});
  REQUIRE(again.is_ok());
  CHECK(again->nodes.at("c").activations == std::vector<uint64_t>{0, 2, 0, 0});

  // Heat is what a placement round reads.
  auto heat = (*reader)->heat(0, two_layers_of_four());
  auto round = s.counts_since(0, two_layers_of_four());
  REQUIRE(heat.is_ok());
  REQUIRE(round.is_ok());
  CHECK(*heat == *round);
  CHECK(heat->at("a")[1] == doctest::Approx(9 + 4 + 6));
}

TEST_CASE("series: rolled-up reports keep their totals, in the bucket where the roll-up starts") {
  testing::TempDir dir("series_rollup");
  const std::string path = (dir.path() / "s.db").string();
  auto opened = Store::open(path);
  REQUIRE(opened.is_ok());
  Store& s = **opened;
  REQUIRE(s.insert_report(series_report("a", 1, 1'000, 10, 4, "b", 2, 100.0)).is_ok());
  REQUIRE(s.insert_report(series_report("a", 2, 5'000, 10, 6, "b", 2, 300.0)).is_ok());
  RetentionPolicy policy;
  policy.raw_retention_ms = 1'000;
  policy.bucket_ms = 10'000;
  REQUIRE(Retention::apply(s, policy, 100'000).is_ok());

  auto reader = SeriesReader::open(path);
  REQUIRE(reader.is_ok());
  auto got = (*reader)->series({0, 1000, 20});
  REQUIRE(got.is_ok());
  const NodeSeries& a = got->nodes.at("a");
  CHECK(a.activations[0] == 20);
  CHECK(a.local_hits[0] == 10);
  CHECK(got->peers.at("b").calls[0] == 4);
  CHECK(got->peers.at("b").latency_sum_us[0] == doctest::Approx(800.0));
}

TEST_CASE("series: a missing file, an in-memory store and a bad range are refused by name") {
  testing::TempDir dir("series_bad");
  CHECK_FALSE(SeriesReader::open((dir.path() / "missing.db").string()).is_ok());
  CHECK(SeriesReader::open(":memory:").status().message().find("in-memory") != std::string::npos);
  const std::string path = (dir.path() / "s.db").string();
  REQUIRE(Store::open(path).is_ok());
  auto reader = SeriesReader::open(path);
  REQUIRE(reader.is_ok());
  CHECK((*reader)->series({0, 1000, 0}).status().code() == StatusCode::kInvalidArgument);
  CHECK((*reader)->series({0, 0, 10}).status().code() == StatusCode::kInvalidArgument);
  CHECK((*reader)->series({0, 1000, 10001}).status().code() == StatusCode::kInvalidArgument);
  auto none = (*reader)->committed();
  REQUIRE(none.is_ok());
  CHECK_FALSE(none->has_value());
}

}  // namespace dancemoe::store
