#include "scheduler/store/schema.h"

#include <array>
#include <string>

namespace dancemoe::store {
namespace {

// Migration i (1-based) brings the schema from version i-1 to version i.
// Never edit a migration that has shipped: add a new one.
constexpr std::array<const char*, kSchemaVersion> kMigrations = {
    // 1: the initial schema.
    R"sql(
CREATE TABLE meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE nodes(
  node_id TEXT PRIMARY KEY,
  first_registered_ms INTEGER NOT NULL,
  last_registered_ms INTEGER NOT NULL,
  expert_endpoint TEXT NOT NULL,
  http_endpoint TEXT NOT NULL,
  host_memory_bytes INTEGER NOT NULL,
  placement_version INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE devices(
  node_id TEXT NOT NULL,
  device_idx INTEGER NOT NULL,
  name TEXT NOT NULL,
  expert_budget_bytes INTEGER NOT NULL,
  load_bytes_per_s REAL NOT NULL,
  PRIMARY KEY(node_id, device_idx)
) WITHOUT ROWID;

CREATE TABLE reports(
  id INTEGER PRIMARY KEY,
  node_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  window_start_ms INTEGER NOT NULL,
  window_end_ms INTEGER NOT NULL,
  received_ms INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  activations INTEGER NOT NULL,
  local_hits INTEGER NOT NULL,
  local_calls INTEGER NOT NULL,
  local_mean_us REAL NOT NULL,
  local_p99_us REAL NOT NULL,
  remote_calls INTEGER NOT NULL,
  remote_mean_us REAL NOT NULL,
  remote_p99_us REAL NOT NULL,
  remote_bytes INTEGER NOT NULL,
  remote_failures INTEGER NOT NULL,
  placement_version INTEGER NOT NULL,
  counts BLOB NOT NULL
);
CREATE UNIQUE INDEX reports_identity ON reports(node_id, sequence, window_start_ms);
CREATE INDEX reports_by_time ON reports(received_ms);

CREATE TABLE report_peers(
  report_id INTEGER NOT NULL,
  peer TEXT NOT NULL,
  calls INTEGER NOT NULL,
  mean_us REAL NOT NULL,
  p99_us REAL NOT NULL,
  bytes INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  PRIMARY KEY(report_id, peer)
) WITHOUT ROWID;

CREATE TABLE rollups(
  node_id TEXT NOT NULL,
  bucket_start_ms INTEGER NOT NULL,
  bucket_ms INTEGER NOT NULL,
  n_reports INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  activations INTEGER NOT NULL,
  local_hits INTEGER NOT NULL,
  local_calls INTEGER NOT NULL,
  local_latency_sum_us REAL NOT NULL,
  remote_calls INTEGER NOT NULL,
  remote_latency_sum_us REAL NOT NULL,
  remote_bytes INTEGER NOT NULL,
  remote_failures INTEGER NOT NULL,
  counts BLOB NOT NULL,
  PRIMARY KEY(node_id, bucket_start_ms)
);
CREATE INDEX rollups_by_time ON rollups(bucket_start_ms);

CREATE TABLE rollup_peers(
  node_id TEXT NOT NULL,
  bucket_start_ms INTEGER NOT NULL,
  bucket_ms INTEGER NOT NULL,
  peer TEXT NOT NULL,
  calls INTEGER NOT NULL,
  latency_sum_us REAL NOT NULL,
  bytes INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  PRIMARY KEY(node_id, bucket_start_ms, peer)
) WITHOUT ROWID;

CREATE TABLE watermarks(
  node_id TEXT PRIMARY KEY,
  window_end_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE placements(
  version INTEGER PRIMARY KEY,
  policy TEXT NOT NULL,
  method TEXT NOT NULL,
  trigger TEXT NOT NULL,
  state TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  committed_ms INTEGER,
  ended_ms INTEGER,
  decision_id INTEGER
);

CREATE TABLE placement_nodes(
  version INTEGER NOT NULL,
  node_id TEXT NOT NULL,
  node_idx INTEGER NOT NULL,
  expert_endpoint TEXT NOT NULL,
  device_idx INTEGER NOT NULL,
  device_name TEXT NOT NULL,
  PRIMARY KEY(version, node_id, device_idx)
) WITHOUT ROWID;

CREATE TABLE placement_entries(
  version INTEGER NOT NULL,
  node_id TEXT NOT NULL,
  device_idx INTEGER NOT NULL,
  layer INTEGER NOT NULL,
  expert INTEGER NOT NULL,
  PRIMARY KEY(version, node_id, device_idx, layer, expert)
) WITHOUT ROWID;

CREATE TABLE decisions(
  id INTEGER PRIMARY KEY,
  time_ms INTEGER NOT NULL,
  trigger TEXT NOT NULL,
  policy TEXT NOT NULL,
  outcome TEXT NOT NULL,
  cost_current_s REAL NOT NULL,
  cost_new_s REAL NOT NULL,
  migration_s REAL NOT NULL,
  migration_bytes INTEGER NOT NULL,
  local_hit_ratio_current REAL NOT NULL,
  local_hit_ratio_new REAL NOT NULL,
  window_s REAL NOT NULL,
  n_nodes INTEGER NOT NULL,
  from_version INTEGER NOT NULL,
  version INTEGER NOT NULL,
  message TEXT NOT NULL
);

CREATE TABLE migrations(
  id INTEGER PRIMARY KEY,
  from_version INTEGER NOT NULL,
  to_version INTEGER NOT NULL,
  trigger TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER,
  bytes INTEGER NOT NULL,
  n_nodes INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  reason TEXT NOT NULL
);
)sql",
    // 2: devices have a kind; each device's expert compute (decayed totals
    // from reports) survives re-registration and restarts.
    R"sql(
ALTER TABLE devices ADD COLUMN kind TEXT NOT NULL DEFAULT '';

CREATE TABLE device_compute(
  node_id TEXT NOT NULL,
  device TEXT NOT NULL,
  pairs REAL NOT NULL,
  busy_us REAL NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY(node_id, device)
) WITHOUT ROWID;
)sql",
    // 3: node ids bound to the CURVE key that first registered them.
    R"sql(
CREATE TABLE node_keys(
  node_id TEXT PRIMARY KEY,
  public_key TEXT NOT NULL UNIQUE,
  key_name TEXT NOT NULL,
  bound_ms INTEGER NOT NULL
) WITHOUT ROWID;
)sql",
    // 4: co-activation pairs of each report and roll-up bucket (pair_blob.h);
    // x'00' is the empty list.
    R"sql(
ALTER TABLE reports ADD COLUMN pairs BLOB NOT NULL DEFAULT x'00';
ALTER TABLE rollups ADD COLUMN pairs BLOB NOT NULL DEFAULT x'00';
)sql",
};

}  // namespace

Status configure_connection(Database& db, bool synchronous_full) {
  // journal_mode answers with a row; exec ignores it. A database on a file
  // system without shared memory cannot use WAL: that is an error, since the
  // store's durability argument depends on it.
  DMOE_ASSIGN_OR_RETURN(Statement wal, db.prepare("PRAGMA journal_mode=WAL"));
  DMOE_ASSIGN_OR_RETURN(const bool row, wal.step());
  const std::string mode = row ? wal.column_text(0) : std::string();
  if (mode != "wal" && db.path() != ":memory:") {
    return unavailable(db.path() + ": SQLite could not switch to WAL mode (got '" + mode + "')");
  }
  DMOE_RETURN_IF_ERROR(
      db.exec(synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  DMOE_RETURN_IF_ERROR(db.exec("PRAGMA foreign_keys=ON"));
  // Keep the WAL from growing without bound between checkpoints.
  DMOE_RETURN_IF_ERROR(db.exec("PRAGMA journal_size_limit=67108864"));
  // A placement round reads every raw report of its window (an hour of 16
  // OLMoE-shaped nodes is about 30 MB); with SQLite's default 2 MB page
  // cache each round re-reads them all through the kernel. 64 MB keeps the
  // raw hour and the roll-ups resident (bench_scheduler_round).
  DMOE_RETURN_IF_ERROR(db.exec("PRAGMA cache_size=-65536"));
  return Status::ok();
}

Status check_integrity(Database& db) {
  Result<Statement> check = db.prepare("PRAGMA quick_check(8)");
  std::string found;
  if (check.is_ok()) {
    while (true) {
      Result<bool> row = check->step();
      if (!row.is_ok()) {
        found = row.status().message();
        break;
      }
      if (!*row) break;
      const std::string line = check->column_text(0);
      if (line != "ok") found += (found.empty() ? "" : "; ") + line;
    }
  } else {
    found = check.status().message();
  }
  if (found.empty()) return Status::ok();
  return failed_precondition(db.path() +
                             ": the scheduler database is damaged (PRAGMA quick_check: " + found +
                             "); restore it from a backup, or move it aside and start with a "
                             "fresh --db (its statistics and placement history are then lost)");
}

Result<int> schema_version(Database& db) {
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> version, db.query_int("PRAGMA user_version"));
  return static_cast<int>(version.value_or(0));
}

Status migrate_schema(Database& db) {
  DMOE_ASSIGN_OR_RETURN(int version, schema_version(db));
  if (version > kSchemaVersion) {
    return failed_precondition(db.path() + ": database schema version " + std::to_string(version) +
                               " is newer than this dancemoe-scheduler knows (" +
                               std::to_string(kSchemaVersion) +
                               "); run a newer scheduler or use another --db");
  }
  if (version < 0) {
    return failed_precondition(db.path() + ": invalid schema version " + std::to_string(version));
  }
  while (version < kSchemaVersion) {
    DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(db));
    DMOE_RETURN_IF_ERROR(db.exec(kMigrations[version]));
    ++version;
    DMOE_RETURN_IF_ERROR(db.exec("PRAGMA user_version=" + std::to_string(version)));
    DMOE_RETURN_IF_ERROR(txn.commit());
  }
  return Status::ok();
}

}  // namespace dancemoe::store
