// The SQLite store: schema versions, idempotent reports, statistics
// queries, placements across reopen, and the count blob format.
#include "scheduler/store/store.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "scheduler/store/count_blob.h"
#include "scheduler/store/pair_blob.h"
#include "scheduler/store/schema.h"
#include "tests/support/paths.h"

namespace dancemoe::store {
namespace {

ReportRecord report(const std::string& node, uint64_t sequence, int64_t received_ms,
                    std::vector<CountEntry> counts) {
  ReportRecord r;
  r.node_id = node;
  r.sequence = sequence;
  r.window_start_ms = received_ms - 1000;
  r.window_end_ms = received_ms;
  r.received_ms = received_ms;
  r.tokens = 100;
  r.requests = 2;
  for (const CountEntry& c : counts) r.activations += c.count;
  r.local_hits = r.activations / 2;
  r.local_calls = 10;
  r.local_mean_us = 100.0;
  r.counts = std::move(counts);
  r.peers.push_back({"b", 4, 300.0, 500.0, 4096, 0});
  return r;
}

CountIndex index_2x4() {
  CountIndex index;
  index.layer_offset = {0, 4};
  index.layer_experts = {4, 4};
  index.n_total = 8;
  return index;
}

}  // namespace

TEST_CASE("count blob: round-trips sparse counts and rejects damaged blobs") {
  std::mt19937 rng(7);
  std::vector<CountEntry> entries;
  for (uint16_t l = 0; l < 16; ++l) {
    for (uint16_t e = 0; e < 64; ++e) {
      if (rng() % 3 == 0) entries.push_back({l, e, rng() % 100000});
    }
  }
  entries.push_back({65535, 65535, UINT64_MAX});
  const std::vector<uint8_t> blob = encode_counts(entries);
  auto decoded = decode_counts(blob);
  REQUIRE(decoded.is_ok());
  CHECK(*decoded == entries);
  CHECK(decode_counts(encode_counts({})).is_ok());

  for (size_t cut = 0; cut < blob.size(); cut += 37) {
    CHECK_FALSE(decode_counts(std::span<const uint8_t>(blob.data(), cut)).is_ok());
  }
  std::vector<uint8_t> trailing = blob;
  trailing.push_back(0);
  CHECK(decode_counts(trailing).status().message().find("trailing") != std::string::npos);
  std::vector<uint8_t> repeated = encode_counts(std::vector<CountEntry>{{0, 1, 1}, {0, 2, 1}});
  repeated[3] = 0;  // second delta 0: the same key twice
  CHECK(decode_counts(repeated).status().message().find("repeats a key") != std::string::npos);
  const std::vector<uint8_t> huge_count = {0xff, 0xff, 0xff, 0x0f};
  CHECK_FALSE(decode_counts(huge_count).is_ok());
}

TEST_CASE("pair blob: round-trips co-activation pairs and rejects damaged blobs") {
  std::mt19937 rng(11);
  std::vector<PairEntry> entries;
  for (uint16_t l = 0; l < 4; ++l) {
    for (uint16_t a = 0; a < 16; ++a) {
      for (uint16_t b = a + 1; b < 16; ++b) {
        if (rng() % 5 == 0) entries.push_back({l, a, b, rng() % 5000 + 1});
      }
    }
  }
  entries.push_back({65535, 65534, 65535, UINT64_MAX});
  const std::vector<uint8_t> blob = encode_pairs(entries);
  std::vector<PairEntry> decoded;
  REQUIRE(decode_pairs(blob, [&](const PairEntry& e) { decoded.push_back(e); }).is_ok());
  CHECK(decoded == entries);
  const std::vector<uint8_t> empty = encode_pairs({});
  CHECK(empty == std::vector<uint8_t>{0});  // the schema's default, x'00'
  CHECK(decode_pairs(empty, [](const PairEntry&) { FAIL("no entry expected"); }).is_ok());

  const auto error_of = [](std::span<const uint8_t> b) {
    return decode_pairs(b, [](const PairEntry&) {}).message();
  };
  for (size_t cut = 0; cut < blob.size(); cut += 29) {
    CHECK_FALSE(error_of(std::span<const uint8_t>(blob.data(), cut)).empty());
  }
  std::vector<uint8_t> trailing = blob;
  trailing.push_back(0);
  CHECK(error_of(trailing).find("trailing") != std::string::npos);
  std::vector<uint8_t> repeated = encode_pairs(std::vector<PairEntry>{{0, 1, 2, 1}, {0, 1, 3, 1}});
  repeated[5] = 0;  // second delta 0 (after 1 + 3 + 1 bytes): the same pair twice
  CHECK(error_of(repeated).find("repeats a key") != std::string::npos);
  // a >= b: key (layer 0, a 2, b 1).
  const std::vector<uint8_t> reversed = encode_pairs(std::vector<PairEntry>{{0, 2, 1, 1}});
  CHECK(error_of(reversed).find("not below") != std::string::npos);
  const std::vector<uint8_t> too_many = {0x7f, 1, 1};
  CHECK(error_of(too_many).find("cannot fit") != std::string::npos);
}

TEST_CASE("store: creates the schema, records its version, refuses a newer database") {
  testing::TempDir dir("store");
  const std::string path = (dir.path() / "s.db").string();
  {
    auto store = Store::open(path);
    REQUIRE(store.is_ok());
    CHECK(*schema_version((*store)->db()) == kSchemaVersion);
    auto mode = (*store)->db().prepare("PRAGMA journal_mode");
    REQUIRE(mode.is_ok());
    REQUIRE(*mode->step());
    CHECK(mode->column_text(0) == "wal");
  }
  {
    auto db = Database::open(path);
    REQUIRE(db.is_ok());
    REQUIRE((*db)->exec("PRAGMA user_version=" + std::to_string(kSchemaVersion + 1)).is_ok());
  }
  auto newer = Store::open(path);
  REQUIRE_FALSE(newer.is_ok());
  CHECK(newer.status().code() == StatusCode::kFailedPrecondition);
  CHECK(newer.status().message().find("schema version " + std::to_string(kSchemaVersion + 1) +
                                      " is newer than this dancemoe-scheduler knows (" +
                                      std::to_string(kSchemaVersion) + ")") != std::string::npos);

  const std::string junk = (dir.path() / "junk.db").string();
  {
    std::FILE* f = std::fopen(junk.c_str(), "wb");
    std::fputs("this is not a database, just text long enough to be checked by sqlite", f);
    std::fclose(f);
  }
  CHECK_FALSE(Store::open(junk).is_ok());
}

TEST_CASE("store: binds the model and cluster ids and refuses another model later") {
  testing::TempDir dir("store");
  const std::string path = (dir.path() / "s.db").string();
  {
    auto store = Store::open(path);
    REQUIRE(store.is_ok());
    REQUIRE((*store)->bind_identity("m1", "lab").is_ok());
    REQUIRE((*store)->bind_identity("m1", "lab").is_ok());
  }
  auto store = Store::open(path);
  REQUIRE(store.is_ok());
  const Status other = (*store)->bind_identity("m2", "lab");
  CHECK(other.code() == StatusCode::kFailedPrecondition);
  CHECK(other.message().find("belongs to model_id 'm1', this scheduler serves model_id 'm2'") !=
        std::string::npos);
}

TEST_CASE("store: a report is stored once per (node, sequence, window start)") {
  testing::TempDir dir("store");
  auto store = Store::open((dir.path() / "s.db").string());
  REQUIRE(store.is_ok());
  Store& s = **store;
  const ReportRecord r = report("a", 5, 10'000, {{0, 1, 3}, {1, 2, 4}});
  CHECK(*s.insert_report(r) == InsertOutcome::kStored);
  CHECK(*s.insert_report(r) == InsertOutcome::kDuplicate);
  ReportRecord later = r;
  later.window_start_ms += 5000;
  later.window_end_ms += 5000;
  later.received_ms += 5000;
  later.placement_version = r.placement_version + 1;
  CHECK(*s.insert_report(later) == InsertOutcome::kStored);  // restarted sequence numbers
  CHECK(*s.db().query_int("SELECT count(*) FROM reports") == 2);
  CHECK(*s.db().query_int("SELECT count(*) FROM report_peers") == 2);

  auto counts = s.counts_since(0, index_2x4());
  REQUIRE(counts.is_ok());
  CHECK((*counts)["a"] == std::vector<double>{0, 6, 0, 0, 0, 0, 8, 0});
  auto totals = s.totals_since(0);
  REQUIRE(totals.is_ok());
  const NodeTotals& t = (*totals)["a"];
  CHECK(t.n_reports == 2);
  CHECK(t.tokens == 200);
  CHECK(t.activations == 14);
  CHECK(*t.local_hit_ratio() == doctest::Approx(6.0 / 14.0));
  CHECK(*t.remote_mean_us() == doctest::Approx(300.0));
  CHECK(t.peers.at("b").calls == 8);
  // Time filter: only what was received since.
  CHECK(s.totals_since(12'000)->at("a").n_reports == 1);
  // Version filter: only the reports of that placement version.
  CHECK(s.totals_since(0, r.placement_version)->at("a").n_reports == 1);
  CHECK(s.totals_since(0, later.placement_version)->at("a").tokens == 100);
  CHECK(s.totals_since(0, later.placement_version + 1)->count("a") == 0);
  auto latest = s.latest_reports();
  REQUIRE(latest.is_ok());
  CHECK((*latest)["a"].window_start_ms == later.window_start_ms);
}

TEST_CASE("store: placements, decisions and migrations survive a reopen -- versions only grow") {
  testing::TempDir dir("store");
  const std::string path = (dir.path() / "s.db").string();
  {
    auto store = Store::open(path);
    REQUIRE(store.is_ok());
    Store& s = **store;
    CHECK(*s.max_placement_version() == 0);
    PlacementRecord p;
    p.version = 1;
    p.policy = "uniform";
    p.method = "m";
    p.trigger = "cold_start";
    p.state = "preparing";
    p.created_ms = 100;
    p.nodes = {{"a", "tcp://a:1", {{"gpu0", {{0, 1}, {2, 3}}}, {"gpu1", {}}}}, {"thin", "", {}}};
    DecisionRecord d;
    d.trigger = "cold_start";
    d.outcome = "adopted";
    d.version = 1;
    MigrationRecord m;
    m.to_version = 1;
    m.outcome = "preparing";
    REQUIRE(s.start_placement(&d, &p, &m).is_ok());
    CHECK(d.id > 0);
    CHECK(m.id > 0);
    REQUIRE(s.commit_placement(1, m.id, 200).is_ok());
    p.version = 2;
    p.state = "preparing";
    DecisionRecord d2 = d;
    MigrationRecord m2 = m;
    m2.to_version = 2;
    REQUIRE(s.start_placement(&d2, &p, &m2).is_ok());
  }
  auto store = Store::open(path);
  REQUIRE(store.is_ok());
  Store& s = **store;
  auto abandoned = s.abandon_unfinished("restart", 300);
  REQUIRE(abandoned.is_ok());
  CHECK(*abandoned == std::vector<uint64_t>{2});
  auto committed = s.committed_placement();
  REQUIRE(committed.is_ok());
  REQUIRE(committed->has_value());
  const PlacementRecord& c = **committed;
  CHECK(c.version == 1);
  CHECK(c.state == "committed");
  CHECK(c.committed_ms == 200);
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.nodes[0].devices.size() == 2);
  CHECK(c.nodes[0].devices[0].experts == std::vector<ExpertRef>{{0, 1}, {2, 3}});
  CHECK(c.nodes[1].node_id == "thin");
  CHECK(c.nodes[1].devices.empty());
  CHECK(*s.max_placement_version() == 2);
  auto migrations = s.recent_migrations(10);
  REQUIRE(migrations.is_ok());
  CHECK((*migrations)[0].outcome == "aborted");
  CHECK((*migrations)[0].reason == "restart");
  CHECK((*migrations)[1].outcome == "committed");
}

TEST_CASE("store: nodes and their devices are saved and reloaded") {
  testing::TempDir dir("store");
  auto store = Store::open((dir.path() / "s.db").string());
  REQUIRE(store.is_ok());
  NodeRecord n;
  n.node_id = "a";
  n.first_registered_ms = 1;
  n.last_registered_ms = 2;
  n.expert_endpoint = "tcp://a:5551";
  n.devices = {{"gpu0", 1000, 2e9, "cuda", 0, 0}, {"cpu", 500, 1e9, "cpu", 0, 0}};
  REQUIRE((*store)->save_node(n).is_ok());
  n.last_registered_ms = 3;
  n.devices.pop_back();
  REQUIRE((*store)->save_node(n).is_ok());
  auto nodes = (*store)->load_nodes();
  REQUIRE(nodes.is_ok());
  REQUIRE(nodes->size() == 1);
  CHECK((*nodes)[0].first_registered_ms == 1);
  CHECK((*nodes)[0].last_registered_ms == 3);
  REQUIRE((*nodes)[0].devices.size() == 1);
  CHECK((*nodes)[0].devices[0].load_bytes_per_s == 2e9);
  CHECK((*nodes)[0].devices[0].kind == "cuda");
  CHECK((*nodes)[0].devices[0].us_per_pair() == 0);  // never measured
}

TEST_CASE("store: each device's reported compute is kept with decay and survives a restart") {
  testing::TempDir dir("store-compute");
  const std::string path = (dir.path() / "s.db").string();
  {
    auto store = Store::open(path);
    REQUIRE(store.is_ok());
    NodeRecord n;
    n.node_id = "a";
    n.devices = {{"cpu:0", 1000, 1e9, "cpu", 0, 0}, {"cpu:1", 1000, 1e9, "cpu", 0, 0}};
    REQUIRE((*store)->save_node(n).is_ok());
    for (uint64_t seq = 1; seq <= 2; ++seq) {
      ReportRecord r;
      r.node_id = "a";
      r.sequence = seq;
      r.window_start_ms = static_cast<int64_t>(seq) * 1000;
      r.window_end_ms = r.window_start_ms + 1000;
      r.devices = {{"cpu:0", 100, 1000.0}, {"cpu:1", 100, 4000.0}};
      REQUIRE((*store)->insert_report(r).is_ok());
    }
    // Re-registration keeps what was measured.
    REQUIRE((*store)->save_node(n).is_ok());
  }
  auto store = Store::open(path);
  REQUIRE(store.is_ok());
  auto nodes = (*store)->load_nodes();
  REQUIRE(nodes.is_ok());
  REQUIRE((*nodes)[0].devices.size() == 2);
  const DeviceRecord& fast = (*nodes)[0].devices[0];
  const DeviceRecord& slow = (*nodes)[0].devices[1];
  CHECK(fast.compute_pairs == doctest::Approx(100 * kDeviceComputeDecay + 100));
  CHECK(fast.us_per_pair() == doctest::Approx(10.0));
  CHECK(slow.us_per_pair() == doctest::Approx(40.0));
  DeviceRecord in_memory = (*nodes)[0].devices[0];
  in_memory.add_compute(100, 3000.0);
  CHECK(in_memory.us_per_pair() > fast.us_per_pair());
}

TEST_CASE("store: a damaged database is refused at start with what to do") {
  testing::TempDir dir("store-damaged");
  const std::string path = (dir.path() / "s.db").string();
  {
    auto store = Store::open(path);
    REQUIRE(store.is_ok());
    for (uint64_t seq = 1; seq <= 300; ++seq) {
      REQUIRE((*store)
                  ->insert_report(
                      report("a", seq, 10000 + static_cast<int64_t>(seq), {{0, 1, 3}, {1, 2, 5}}))
                  .is_ok());
    }
  }
  // Garbage over the middle of the file: the header still reads, the
  // b-tree pages do not. Before, the scheduler opened it and failed later,
  // query by query.
  const auto size = std::filesystem::file_size(path);
  REQUIRE(size > 8 * 4096);
  {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    REQUIRE(f != nullptr);
    std::fseek(f, 4 * 4096, SEEK_SET);
    for (int i = 0; i < 2 * 4096; ++i) std::fputc((i * 131) & 0xff, f);
    std::fclose(f);
  }
  auto damaged = Store::open(path);
  REQUIRE_FALSE(damaged.is_ok());
  INFO(damaged.status().message());
  CHECK(damaged.status().message().find(path + ": the scheduler database is damaged") == 0);
  CHECK(damaged.status().message().find("restore it from a backup") != std::string::npos);
}

TEST_CASE("store: node ids bind to one key each -- forgetting a node releases its id") {
  testing::TempDir dir("store-keys");
  auto store = Store::open((dir.path() / "s.db").string());
  REQUIRE(store.is_ok());
  Store& s = **store;
  NodeRecord a;
  a.node_id = "a";
  a.devices = {{"cpu0", 1000, 1e9, "cpu", 0.0, 0.0}};
  REQUIRE(s.save_node(a).is_ok());
  REQUIRE(s.bind_node_key({"a", "key-a", "ws-a", 5}).is_ok());
  CHECK(s.bind_node_key({"a", "key-b", "ws-b", 6}).code() == StatusCode::kFailedPrecondition);
  CHECK(s.bind_node_key({"b", "key-a", "ws-a", 6}).code() == StatusCode::kFailedPrecondition);
  auto bindings = s.load_key_bindings();
  REQUIRE(bindings.is_ok());
  REQUIRE(bindings->size() == 1);
  CHECK((*bindings)[0].public_key == "key-a");
  CHECK((*bindings)[0].key_name == "ws-a");

  REQUIRE(s.forget_node("a").is_ok());
  CHECK(s.load_nodes()->empty());
  CHECK(s.load_key_bindings()->empty());
  CHECK(s.forget_node("a").code() == StatusCode::kNotFound);
  REQUIRE(s.bind_node_key({"a", "key-b", "ws-b", 7}).is_ok());
}

}  // namespace dancemoe::store
