// The scheduler's persistent state in one SQLite file (DESIGN.md §6):
// nodes, activation reports, placements, placement decisions and
// migrations. schema.h lists the tables; retention.h rolls old reports up.
//
// Durability: WAL mode; every report is one transaction, committed before
// the scheduler acknowledges it, so a report that was acked survives a
// kill -9 of the scheduler (synchronous=NORMAL) or a power loss
// (synchronous=FULL, Options::synchronous_full). Multi-row changes that
// must not be seen half-done (starting, committing or aborting a placement
// version) are one transaction each.
//
// Idempotency: a report is identified by (node, envelope sequence, window
// start). Inserting it again is a no-op reported as kDuplicate; the window
// start is part of the key so that a node that restarts its sequence
// numbers is not mistaken for a resend. A report whose window ended before
// the newest window retention already rolled up for that node is kStale
// (its duplicate may have been rolled up; it is acknowledged, not stored).
//
// Ownership and threads: the Store owns its connection and prepared
// statements; all calls from one thread (the service loop).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/base/status.h"
#include "scheduler/store/records.h"
#include "scheduler/store/sqlite.h"

namespace dancemoe::store {

// Maps a (model layer, expert) pair to a dense index (the placement
// library's flat expert id); -1 for a dense layer or an index out of range.
struct CountIndex {
  std::vector<int32_t> layer_offset;   // [model layer] -> first flat id, -1 for dense layers
  std::vector<int32_t> layer_experts;  // [model layer] -> experts (0 for dense layers)
  int32_t n_total = 0;

  int32_t flat(uint32_t layer, uint32_t expert) const {
    if (layer >= layer_offset.size() || layer_offset[layer] < 0) return -1;
    if (expert >= static_cast<uint32_t>(layer_experts[layer])) return -1;
    return layer_offset[layer] + static_cast<int32_t>(expert);
  }
};

class Store {
 public:
  struct Options {
    bool synchronous_full = false;
  };

  // Opens or creates the file, sets WAL and the synchronous level, and
  // migrates the schema (refusing a newer one).
  static Result<std::unique_ptr<Store>> open(const std::string& path, const Options& options);
  static Result<std::unique_ptr<Store>> open(const std::string& path) {
    return open(path, Options{});
  }

  Database& db() { return *db_; }
  const std::string& path() const { return db_->path(); }

  // The first call records the model and cluster ids; later opens must
  // match them (a database of another model's statistics is refused).
  Status bind_identity(const std::string& model_id, const std::string& cluster_id);

  Status save_node(const NodeRecord& node);
  Result<std::vector<NodeRecord>> load_nodes();

  // Node ids and their keys (store_keys.cpp). bind_node_key refuses (with
  // failed_precondition) an id or a key that is already bound.
  Result<std::vector<KeyBinding>> load_key_bindings();
  Status bind_node_key(const KeyBinding& binding);
  // Forgets a node: its record, devices and key binding (its reports stay
  // until retention drops them). not_found when no such node is stored.
  Status forget_node(const std::string& node_id);

  Result<InsertOutcome> insert_report(const ReportRecord& report);
  int64_t report_count_estimate() const { return n_reports_inserted_; }

  // Sums per node of the reports received at or after `since_ms` (raw
  // reports, and roll-up buckets that end after since_ms). With
  // `placement_version`, raw reports of other versions are left out (a
  // node's last window of the old placement arrives after the new one is
  // committed, and its local hits are of the old placement).
  Result<std::map<std::string, NodeTotals>> totals_since(
      int64_t since_ms, std::optional<uint64_t> placement_version = std::nullopt);
  // Activation counts per node since `since_ms`, as dense vectors over
  // `index` (entries outside it are ignored: they were validated on the way
  // in, so only a model change could produce them, and bind_identity refuses that).
  Result<std::map<std::string, std::vector<double>>> counts_since(int64_t since_ms,
                                                                  const CountIndex& index);
  // Co-activation counts per node since `since_ms` (raw reports and roll-up
  // buckets, as counts_since), keyed by the flat ids (a < b) of `index`.
  using PairCounts = std::map<std::pair<int32_t, int32_t>, double>;
  Result<std::map<std::string, PairCounts>> pairs_since(int64_t since_ms, const CountIndex& index);
  // The newest stored report of each node (the "last window").
  Result<std::map<std::string, ReportRecord>> latest_reports();

  // Placements. Versions are never reused: next = max stored + 1.
  Result<uint64_t> max_placement_version();
  Result<std::optional<PlacementRecord>> committed_placement();
  Result<std::optional<PlacementRecord>> placement(uint64_t version);
  Result<std::vector<PlacementRecord>> recent_placements(int limit);

  // Starting a version: the decision, the placement (state "preparing") and
  // the migration row, in one transaction. Fills decision.id, placement
  // decision_id and migration id.
  Status start_placement(DecisionRecord* decision, PlacementRecord* placement,
                         MigrationRecord* migration);
  // Commit: the version becomes "committed", the previously committed one
  // "superseded", the migration ends "committed". One transaction.
  Status commit_placement(uint64_t version, int64_t migration_id, int64_t now_ms);
  Status abort_placement(uint64_t version, int64_t migration_id, const std::string& reason,
                         int64_t now_ms);
  // At startup: versions left "preparing" by a crash are aborted with
  // `reason`; returns them.
  Result<std::vector<uint64_t>> abandon_unfinished(const std::string& reason, int64_t now_ms);

  // A decision that started no version (rejected, error, skipped).
  Status record_decision(DecisionRecord* decision);
  Result<std::vector<DecisionRecord>> recent_decisions(int limit);
  Result<std::vector<MigrationRecord>> recent_migrations(int limit);

  // Bytes of the database file and its WAL.
  uint64_t file_bytes() const;

  ~Store();

 private:
  friend class Retention;
  Store() = default;
  Status prepare_statements();
  Status load_watermarks();
  Status insert_placement_rows(const PlacementRecord& placement);

  std::unique_ptr<Database> db_;
  Statement insert_report_;
  Statement insert_peer_;
  Statement upsert_device_compute_;
  std::unordered_map<std::string, int64_t> watermarks_;  // node -> newest rolled-up window end
  int64_t n_reports_inserted_ = 0;
};

}  // namespace dancemoe::store
