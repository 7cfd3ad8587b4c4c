// Activation reports into the real daemon's SQLite file: stored exactly once
// under resends; bad input of every kind rejected with an Error and a
// counter while the daemon keeps serving.
#include <doctest/doctest.h>

#include "common/proto/codec.h"
#include "scheduler/store/count_blob.h"
#include "scheduler/store/sqlite.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

using namespace std::chrono_literals;
using testing::make_peer;

int64_t query_int(const std::filesystem::path& db_path, const std::string& sql) {
  store::Database::Options options;
  options.read_only = true;
  auto db = store::Database::open(db_path.string(), options);
  REQUIRE(db.is_ok());
  auto value = (*db)->query_int(sql);
  REQUIRE(value.is_ok());
  return value->value_or(-1);
}

const proto::Error* error_of(const Result<proto::Envelope>& reply) {
  if (!reply.is_ok()) return nullptr;
  return std::get_if<proto::Error>(&reply->body);
}

}  // namespace

TEST_CASE("scheduler daemon: a resent report is stored exactly once in the SQLite file") {
  testing::TempDir dir("sched-reports");
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(),
                                      testing::fast_scheduler_flags());
  scheduler.start();
  auto a = make_peer(scheduler, "node-a", 16);
  REQUIRE(a->wait_registered(10s) == true);

  const auto report = testing::tiny_report({{0, 1}, {2, 5}, {3, 7}}, 11, 5000);
  const uint64_t sequence = a->next_sequence();
  for (int i = 0; i < 3; ++i) {
    auto answer = a->send_report(report, sequence, 10s);
    REQUIRE(answer.is_ok());
    const auto* ack = std::get_if<proto::Ack>(&answer->body);
    REQUIRE(ack != nullptr);
    CHECK(ack->sequence == sequence);
  }
  // Ten more through the resending path.
  for (uint64_t i = 0; i < 10; ++i) {
    REQUIRE(a->report(testing::tiny_report({{0, 1}}, 2, 10000 + i * 500), 10s).is_ok());
  }
  const auto db = scheduler.db_path();
  CHECK(query_int(db, "SELECT count(*) FROM reports WHERE node_id = 'node-a'") == 11);
  CHECK(query_int(
            db, "SELECT count(*) FROM reports WHERE sequence = " + std::to_string(sequence)) == 1);
  CHECK(query_int(db, "SELECT sum(activations) FROM reports") == 33 + 10 * 2);
  CHECK(query_int(db, "SELECT count(*) FROM report_peers") == 11);
  auto status = testing::scheduler_query(scheduler, "status");
  REQUIRE(status.is_ok());
  CHECK((*status)["counters"]["reports_stored_total"] == 11);
  CHECK((*status)["counters"]["reports_duplicate_total"] == 2);
  CHECK((*status)["nodes"]["list"][0]["tokens_last_window"] == 100000);
}

TEST_CASE("scheduler daemon: bad input is answered with an Error, counted, and serving goes on") {
  testing::TempDir dir("sched-bad");
  auto flags = testing::fast_scheduler_flags();
  flags.insert(flags.end(), {"--max-message-bytes", "1048576"});
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(), flags);
  scheduler.start();
  auto a = make_peer(scheduler, "node-a", 16);
  REQUIRE(a->wait_registered(10s) == true);

  const proto::Envelope good = [&] {
    proto::Envelope e;
    e.cluster_id = "default";
    e.sender = "node-a";
    e.sequence = a->next_sequence();
    e.body = testing::tiny_report({{0, 1}}, 1, 1000);
    return e;
  }();
  const std::vector<uint8_t> bytes = proto::encode(good);

  SUBCASE("truncated") {
    auto reply = a->request_raw({bytes.begin(), bytes.begin() + bytes.size() / 2}, 10s);
    REQUIRE(error_of(reply) != nullptr);
    CHECK(error_of(reply)->code == StatusCode::kInvalidArgument);
    CHECK(error_of(reply)->message.find("verification") != std::string::npos);
  }
  SUBCASE("unverifiable") {
    std::vector<uint8_t> garbage(300);
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 37 + 11);
    auto reply = a->request_raw(garbage, 10s);
    REQUIRE(error_of(reply) != nullptr);
    CHECK(error_of(reply)->code == StatusCode::kInvalidArgument);
  }
  SUBCASE("oversized") {
    std::vector<uint8_t> big(2 << 20, 0x41);
    auto reply = a->request_raw(big, 10s);
    REQUIRE(error_of(reply) != nullptr);
    CHECK(error_of(reply)->message.find("exceeds the limit of 1048576") != std::string::npos);
  }
  SUBCASE("another protocol major version") {
    proto::Envelope v2 = good;
    v2.protocol_major = 2;
    auto reply = a->request_raw(proto::encode(v2), 10s);
    REQUIRE(error_of(reply) != nullptr);
    CHECK(error_of(reply)->code == StatusCode::kVersionMismatch);
    const std::string minor = std::to_string(proto::kProtocolMinor);
    CHECK(error_of(reply)->message ==
          "peer speaks protocol 2." + minor + ", this build speaks 1." + minor);
  }
  SUBCASE("out-of-range layer, expert, count and sizes") {
    const std::vector<std::pair<proto::ActivationReport, std::string>> cases = {
        {testing::tiny_report({{1, 0}}, 1, 1000), "layer 1 expert 0 is in a dense layer"},
        {testing::tiny_report({{0, 8}}, 1, 1000), "layer 0 expert 8 is out of range"},
        {testing::tiny_report({{4000, 1}}, 1, 1000), "layer 4000 expert 1 is out of range"},
        {testing::tiny_report({{0, 1}}, 4294967295u, 1000), "has count 4294967295"},
        {[] {
           auto r = testing::tiny_report({{0, 1}}, 1, 1000);
           r.tokens = uint64_t{1} << 50;
           return r;
         }(),
         "tokens: 1125899906842624 is more than the limit"},
    };
    for (const auto& [report, expected] : cases) {
      CAPTURE(expected);
      auto reply = a->send_report(report, a->next_sequence(), 10s);
      REQUIRE(error_of(reply) != nullptr);
      CHECK(error_of(reply)->code == StatusCode::kInvalidArgument);
      CHECK(error_of(reply)->message.find(expected) != std::string::npos);
    }
    // The codec refuses negative latencies before the scheduler sees them.
    auto negative = testing::tiny_report({{0, 1}}, 1, 1000);
    negative.local_mean_latency_us = -5.0;
    auto reply = a->send_report(negative, a->next_sequence(), 10s);
    REQUIRE(error_of(reply) != nullptr);
    CHECK(error_of(reply)->message.find("local_mean_latency_us") != std::string::npos);
  }
  SUBCASE("a message type the scheduler does not take") {
    auto reply = a->request(proto::Commit{3}, 10s);
    REQUIRE(error_of(reply) != nullptr);
    CHECK(error_of(reply)->message == "the scheduler does not accept Commit messages");
  }
  SUBCASE("a malformed status query") {
    auto reply = a->request(proto::StatusRequest{"status", "[1,2"}, 10s);
    REQUIRE(error_of(reply) != nullptr);
    CHECK(error_of(reply)->message.find("expected a JSON object") != std::string::npos);
  }

  // Whatever was sent, the daemon still stores a good report and answers.
  REQUIRE(scheduler.running());
  REQUIRE(a->report(testing::tiny_report({{2, 2}}, 3, 77000), 10s).is_ok());
  auto status = testing::scheduler_query(scheduler, "status");
  REQUIRE(status.is_ok());
  CHECK((*status)["counters"]["rejected_total"].get<uint64_t>() >= 1);
  CHECK((*status)["counters"]["reports_stored_total"] == 1);
}

}  // namespace dancemoe
