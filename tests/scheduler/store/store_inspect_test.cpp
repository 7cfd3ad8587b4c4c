// inspect_store: what a database holds, read without changing it.
#include "scheduler/store/store_inspect.h"

#include <doctest/doctest.h>

#include <fstream>

#include "scheduler/store/schema.h"
#include "scheduler/store/store.h"
#include "tests/support/paths.h"

namespace dancemoe::store {
namespace {

TEST_CASE("inspect_store: identity and nodes of a used database, unchanged by the look") {
  testing::TempDir dir("inspect");
  const std::string path = (dir.path() / "s.db").string();
  {
    auto store = Store::open(path);
    REQUIRE(store.is_ok());
    REQUIRE((*store)->bind_identity("model-1", "lab").is_ok());
    NodeRecord node;
    node.node_id = "a";
    REQUIRE((*store)->save_node(node).is_ok());
  }
  const auto before = std::filesystem::last_write_time(path);
  Result<StoreSummary> s = inspect_store(path);
  REQUIRE(s.is_ok());
  CHECK(s->schema_version == kSchemaVersion);
  CHECK(s->model_id == "model-1");
  CHECK(s->cluster_id == "lab");
  CHECK(s->nodes == 1);
  CHECK(std::filesystem::last_write_time(path) == before);
}

TEST_CASE("inspect_store: a missing, damaged or newer database is an error naming the file") {
  testing::TempDir dir("inspect-bad");
  const std::string missing = (dir.path() / "none.db").string();
  Result<StoreSummary> none = inspect_store(missing);
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.status().message().find("none.db") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(missing));  // not created by looking

  const std::string junk = (dir.path() / "junk.db").string();
  std::ofstream(junk) << std::string(4096, 'x');
  Result<StoreSummary> damaged = inspect_store(junk);
  REQUIRE_FALSE(damaged.is_ok());
  CHECK(damaged.status().message().find("junk.db") != std::string::npos);

  const std::string newer = (dir.path() / "newer.db").string();
  {
    auto db = Database::open(newer);
    REQUIRE(db.is_ok());
    REQUIRE((*db)->exec("PRAGMA user_version=" + std::to_string(kSchemaVersion + 1)).is_ok());
  }
  Result<StoreSummary> future = inspect_store(newer);
  REQUIRE_FALSE(future.is_ok());
  CHECK(future.status().message().find("newer than this dancemoe-scheduler") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::store
