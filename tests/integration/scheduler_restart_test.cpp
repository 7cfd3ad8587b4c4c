// kill -9 of the real scheduler in the middle of a stream of reports: after
// a restart on the same address and database, every acknowledged report is
// there exactly once, the placement version is intact, and the nodes
// re-attach by themselves.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "scheduler/store/sqlite.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

using namespace std::chrono_literals;
using testing::make_peer;

}  // namespace

TEST_CASE("scheduler daemon: kill -9 during a report stream loses no acknowledged report") {
  testing::TempDir dir("sched-kill");
  const int port = testing::free_tcp_port();
  REQUIRE(port > 0);
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(),
                                      testing::fast_scheduler_flags(), port);
  scheduler.start();
  const std::string ep = scheduler.endpoint();
  std::vector<std::unique_ptr<testing::ProtocolPeer>> peers;
  for (const char* id : {"node-a", "node-b", "node-c"}) {
    peers.push_back(make_peer(scheduler, id, 12));
  }
  for (auto& p : peers) REQUIRE(p->wait_committed(1, 15s));

  // Each peer streams reports, each resent until acknowledged.
  constexpr int kReports = 60;
  std::mutex mutex;
  std::map<std::string, std::set<uint64_t>> acked;
  std::atomic<int> failures{0};
  std::vector<std::thread> streams;
  for (auto& p : peers) {
    streams.emplace_back([&, peer = p.get()] {
      for (int i = 0; i < kReports; ++i) {
        auto sent = peer->report(testing::tiny_report({{0, 1}, {3, 2}}, 5, 1000 + i * 500), 30s);
        if (!sent.is_ok()) {
          ++failures;
          continue;
        }
        std::lock_guard lock(mutex);
        acked[peer->node_id()].insert(*sent);
        if (i % 4 == 0) std::this_thread::sleep_for(5ms);
      }
    });
  }
  // Kill it once some reports are in, mid-stream.
  REQUIRE(testing::eventually(
      [&] {
        std::lock_guard lock(mutex);
        return acked["node-a"].size() >= 10;
      },
      20s));
  scheduler.kill();
  size_t acked_at_kill = 0;
  {
    std::lock_guard lock(mutex);
    for (auto& [node, set] : acked) acked_at_kill += set.size();
  }
  std::this_thread::sleep_for(300ms);
  scheduler.start();
  CHECK(scheduler.endpoint() == ep);
  for (auto& t : streams) t.join();
  CHECK(failures == 0);

  // Every acknowledged report is stored, once.
  store::Database::Options read_only;
  read_only.read_only = true;
  auto db = store::Database::open(scheduler.db_path().string(), read_only);
  REQUIRE(db.is_ok());
  size_t total_acked = 0;
  for (const auto& [node, sequences] : acked) {
    total_acked += sequences.size();
    CHECK(sequences.size() == kReports);
    for (uint64_t sequence : sequences) {
      auto n = (*db)->query_int("SELECT count(*) FROM reports WHERE node_id = '" + node +
                                "' AND sequence = " + std::to_string(sequence));
      REQUIRE(n.is_ok());
      CAPTURE(node);
      CAPTURE(sequence);
      CHECK(n->value_or(0) == 1);
    }
  }
  CHECK(total_acked > acked_at_kill);  // the stream went on after the restart
  CHECK((*db)->query_int("SELECT count(*) FROM reports")->value_or(0) ==
        static_cast<int64_t>(total_acked));

  // The placement version survived, and the nodes re-attached.
  auto status = testing::scheduler_query(scheduler, "status");
  REQUIRE(status.is_ok());
  CHECK((*status)["placement"]["version"] == 1);
  CHECK(testing::eventually(
      [&] {
        auto s = testing::scheduler_query(scheduler, "status");
        return s.is_ok() && (*s)["nodes"]["up"] == 3;
      },
      10s));
  for (auto& p : peers) {
    CHECK(p->registrations() >= 2);
    CHECK(p->committed_version() == 1);
  }
  auto migrations = testing::scheduler_query(scheduler, "migrations");
  REQUIRE(migrations.is_ok());
  CHECK((*migrations)["migrations"].size() == 1);  // no spurious repair after the restart
  CHECK(scheduler.stop() == 0);
}

}  // namespace dancemoe
