// StatusQuery on its own: a view over state built by hand (no service), a
// real SQLite store and a FakeClock.
#include "scheduler/daemon/status_query.h"

#include <doctest/doctest.h>

#include "tests/scheduler/daemon/service_harness.h"

namespace dancemoe::scheduler::test {
namespace {

struct Fixture {
  testing::TempDir dir{"status_query"};
  std::unique_ptr<store::Store> store;
  ServiceOptions options = fast_options();
  ModelInfo model = tiny_model();
  FakeClock clock;
  Membership membership;
  std::optional<store::PlacementRecord> committed;
  std::optional<Migration> migration;
  SchedulerCounters counters;

  Fixture() {
    auto opened = store::Store::open((dir.path() / "scheduler.db").string());
    REQUIRE(opened.is_ok());
    store = std::move(*opened);
  }
  StatusView view() {
    return StatusView{options,   model,    *store,           clock, membership, committed,
                      migration, counters, clock.steady_ms()};
  }
};

}  // namespace

TEST_CASE("status query: reads the state it is shown, before and after a placement") {
  Fixture f;
  f.counters.reject(Rejection::kWrongCluster);
  const StatusView view = f.view();
  const StatusQuery query(view);
  Result<nlohmann::ordered_json> status = query.status();
  REQUIRE(status.is_ok());
  CHECK((*status)["placement"].is_null());
  CHECK((*status)["nodes"]["up"] == 0);
  CHECK((*status)["counters"]["rejected_wrong_cluster_total"] == 1);
  CHECK((*status)["model"]["id"] == "model-tiny");
  CHECK(query.placement(std::nullopt).status().code() == StatusCode::kNotFound);

  store::PlacementRecord record;
  record.version = 3;
  record.policy = "optimal";
  record.state = "committed";
  record.nodes = {{"a", "tcp://a:1", {{"cpu", {{0, 1}, {2, 5}}}}},
                  {"b", "tcp://b:1", {{"cpu", {{0, 1}}}}}};
  f.committed = record;
  Result<nlohmann::ordered_json> placement = query.placement(std::nullopt);
  REQUIRE(placement.is_ok());
  CHECK((*placement)["version"] == 3);
  CHECK((*placement)["nodes"]["a"]["expert_endpoint"] == "tcp://a:1");
  CHECK((*placement)["layers"][0]["holders"][1] == nlohmann::json{"a", "b"});
  Result<nlohmann::ordered_json> layer2 = query.placement(2);
  REQUIRE(layer2.is_ok());
  CHECK((*layer2)["nodes"]["a"]["devices"]["cpu"].size() == 1);
  CHECK(query.placement(1).status().message().find("not a MoE layer") != std::string::npos);
  Result<nlohmann::ordered_json> migrations = query.migrations(5);
  REQUIRE(migrations.is_ok());
  CHECK((*migrations)["migrations"].empty());
}

}  // namespace dancemoe::scheduler::test
