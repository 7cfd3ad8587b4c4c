// Store: placements, placement decisions and migrations (store.h).
#include <map>

#include "scheduler/store/sqlite.h"
#include "scheduler/store/store.h"

namespace dancemoe::store {
namespace {

std::optional<int64_t> optional_int(const Statement& s, int column) {
  if (s.column_is_null(column)) return std::nullopt;
  return s.column_int(column);
}

constexpr const char* kPlacementColumns =
    "version, policy, method, trigger, state, created_ms, committed_ms, ended_ms, decision_id";

PlacementRecord read_placement_row(const Statement& s) {
  PlacementRecord p;
  p.version = u64(s.column_int(0));
  p.policy = s.column_text(1);
  p.method = s.column_text(2);
  p.trigger = s.column_text(3);
  p.state = s.column_text(4);
  p.created_ms = s.column_int(5);
  p.committed_ms = optional_int(s, 6);
  p.ended_ms = optional_int(s, 7);
  p.decision_id = s.column_int(8);
  return p;
}

Status insert_decision(Database& db, DecisionRecord* d) {
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db.prepare("INSERT INTO decisions(time_ms, trigger, policy, outcome, cost_current_s, "
                 "cost_new_s, migration_s, migration_bytes, local_hit_ratio_current, "
                 "local_hit_ratio_new, window_s, n_nodes, from_version, version, message) "
                 "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  s.bind(1, d->time_ms)
      .bind(2, d->trigger)
      .bind(3, d->policy)
      .bind(4, d->outcome)
      .bind(5, d->cost_current_s)
      .bind(6, d->cost_new_s)
      .bind(7, d->migration_s)
      .bind(8, i64(d->migration_bytes))
      .bind(9, d->local_hit_ratio_current)
      .bind(10, d->local_hit_ratio_new)
      .bind(11, d->window_s)
      .bind(12, d->n_nodes)
      .bind(13, i64(d->from_version))
      .bind(14, i64(d->version))
      .bind(15, d->message);
  DMOE_RETURN_IF_ERROR(s.run());
  d->id = db.last_insert_rowid();
  return Status::ok();
}

Status set_state(Database& db, uint64_t version, const char* state, const char* extra_column,
                 int64_t time_ms) {
  DMOE_ASSIGN_OR_RETURN(Statement s, db.prepare(std::string("UPDATE placements SET state = ?, ") +
                                                extra_column + " = ? WHERE version = ?"));
  s.bind(1, std::string_view(state)).bind(2, time_ms).bind(3, i64(version));
  return s.run();
}

Status end_migration(Database& db, int64_t id, const char* outcome, const std::string& reason,
                     int64_t now_ms) {
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db.prepare("UPDATE migrations SET outcome = ?, reason = ?, ended_ms = ? WHERE id = ?"));
  s.bind(1, std::string_view(outcome)).bind(2, reason).bind(3, now_ms).bind(4, id);
  return s.run();
}

}  // namespace

Status Store::insert_placement_rows(const PlacementRecord& p) {
  DMOE_ASSIGN_OR_RETURN(Statement row,
                        db_->prepare(std::string("INSERT INTO placements(") + kPlacementColumns +
                                     ") VALUES(?,?,?,?,?,?,?,?,?)"));
  row.bind(1, i64(p.version))
      .bind(2, p.policy)
      .bind(3, p.method)
      .bind(4, p.trigger)
      .bind(5, p.state)
      .bind(6, p.created_ms);
  if (p.committed_ms) row.bind(7, *p.committed_ms);
  if (p.ended_ms) row.bind(8, *p.ended_ms);
  row.bind(9, p.decision_id);
  DMOE_RETURN_IF_ERROR(row.run());
  DMOE_ASSIGN_OR_RETURN(Statement node,
                        db_->prepare("INSERT INTO placement_nodes(version, node_id, node_idx, "
                                     "expert_endpoint, device_idx, device_name) "
                                     "VALUES(?,?,?,?,?,?)"));
  DMOE_ASSIGN_OR_RETURN(Statement entry,
                        db_->prepare("INSERT INTO placement_entries(version, node_id, "
                                     "device_idx, layer, expert) VALUES(?,?,?,?,?)"));
  for (size_t n = 0; n < p.nodes.size(); ++n) {
    const NodePlacement& np = p.nodes[n];
    // A node without devices is recorded with device_idx -1 so that it is
    // still part of the version (it routes to the others).
    const size_t n_rows = std::max<size_t>(1, np.devices.size());
    for (size_t g = 0; g < n_rows; ++g) {
      const bool has_device = g < np.devices.size();
      node.reset();
      node.bind(1, i64(p.version))
          .bind(2, np.node_id)
          .bind(3, static_cast<int64_t>(n))
          .bind(4, np.expert_endpoint)
          .bind(5, has_device ? static_cast<int64_t>(g) : int64_t{-1})
          .bind(6, has_device ? np.devices[g].device : std::string());
      DMOE_RETURN_IF_ERROR(node.run());
      if (!has_device) continue;
      for (const ExpertRef& x : np.devices[g].experts) {
        entry.reset();
        entry.bind(1, i64(p.version))
            .bind(2, np.node_id)
            .bind(3, static_cast<int64_t>(g))
            .bind(4, static_cast<int64_t>(x.layer))
            .bind(5, static_cast<int64_t>(x.expert));
        DMOE_RETURN_IF_ERROR(entry.run());
      }
    }
  }
  return Status::ok();
}

Result<uint64_t> Store::max_placement_version() {
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> v,
                        db_->query_int("SELECT max(version) FROM placements"));
  return u64(v.value_or(0));
}

Result<std::optional<PlacementRecord>> Store::placement(uint64_t version) {
  DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare(std::string("SELECT ") + kPlacementColumns +
                                                  " FROM placements WHERE version = ?"));
  s.bind(1, i64(version));
  DMOE_ASSIGN_OR_RETURN(const bool found, s.step());
  if (!found) return std::optional<PlacementRecord>();
  PlacementRecord p = read_placement_row(s);

  DMOE_ASSIGN_OR_RETURN(Statement nodes,
                        db_->prepare("SELECT node_id, expert_endpoint, device_idx, device_name "
                                     "FROM placement_nodes WHERE version = ? "
                                     "ORDER BY node_idx, device_idx"));
  nodes.bind(1, i64(version));
  std::map<std::pair<std::string, int64_t>, DevicePlacement*> devices;
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, nodes.step());
    if (!row) break;
    const std::string id = nodes.column_text(0);
    if (p.nodes.empty() || p.nodes.back().node_id != id) {
      p.nodes.push_back({id, nodes.column_text(1), {}});
    }
    const int64_t g = nodes.column_int(2);
    if (g >= 0) p.nodes.back().devices.push_back({nodes.column_text(3), {}});
  }
  // Pointers into p.nodes are taken only after it stopped growing.
  for (NodePlacement& np : p.nodes) {
    for (size_t g = 0; g < np.devices.size(); ++g) {
      devices[{np.node_id, static_cast<int64_t>(g)}] = &np.devices[g];
    }
  }
  DMOE_ASSIGN_OR_RETURN(Statement entries,
                        db_->prepare("SELECT node_id, device_idx, layer, expert FROM "
                                     "placement_entries WHERE version = ?"));
  entries.bind(1, i64(version));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, entries.step());
    if (!row) break;
    const auto it = devices.find({entries.column_text(0), entries.column_int(1)});
    if (it == devices.end()) {
      return internal_error(path() + ": placement " + std::to_string(version) +
                            " has an entry for an unknown device of node " +
                            entries.column_text(0));
    }
    it->second->experts.push_back({static_cast<uint16_t>(entries.column_int(2)),
                                   static_cast<uint16_t>(entries.column_int(3))});
  }
  return std::optional<PlacementRecord>(std::move(p));
}

Result<std::optional<PlacementRecord>> Store::committed_placement() {
  DMOE_ASSIGN_OR_RETURN(
      std::optional<int64_t> version,
      db_->query_int("SELECT max(version) FROM placements WHERE state = 'committed'"));
  if (!version) return std::optional<PlacementRecord>();
  return placement(u64(*version));
}

Result<std::vector<PlacementRecord>> Store::recent_placements(int limit) {
  std::vector<PlacementRecord> out;
  DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare(std::string("SELECT ") + kPlacementColumns +
                                                  " FROM placements ORDER BY version DESC "
                                                  "LIMIT ?"));
  s.bind(1, static_cast<int64_t>(limit));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    out.push_back(read_placement_row(s));
  }
  return out;
}

Status Store::start_placement(DecisionRecord* decision, PlacementRecord* placement,
                              MigrationRecord* migration) {
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  DMOE_RETURN_IF_ERROR(insert_decision(*db_, decision));
  placement->decision_id = decision->id;
  DMOE_RETURN_IF_ERROR(insert_placement_rows(*placement));
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("INSERT INTO migrations(from_version, to_version, trigger, started_ms, bytes, "
                   "n_nodes, outcome, reason) VALUES(?,?,?,?,?,?,?,?)"));
  s.bind(1, i64(migration->from_version))
      .bind(2, i64(migration->to_version))
      .bind(3, migration->trigger)
      .bind(4, migration->started_ms)
      .bind(5, i64(migration->bytes))
      .bind(6, migration->n_nodes)
      .bind(7, migration->outcome)
      .bind(8, migration->reason);
  DMOE_RETURN_IF_ERROR(s.run());
  migration->id = db_->last_insert_rowid();
  return txn.commit();
}

Status Store::commit_placement(uint64_t version, int64_t migration_id, int64_t now_ms) {
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  DMOE_ASSIGN_OR_RETURN(Statement old,
                        db_->prepare("UPDATE placements SET state = 'superseded', ended_ms = ? "
                                     "WHERE state = 'committed' AND version <> ?"));
  old.bind(1, now_ms).bind(2, i64(version));
  DMOE_RETURN_IF_ERROR(old.run());
  DMOE_RETURN_IF_ERROR(set_state(*db_, version, "committed", "committed_ms", now_ms));
  DMOE_RETURN_IF_ERROR(end_migration(*db_, migration_id, "committed", "", now_ms));
  return txn.commit();
}

Status Store::abort_placement(uint64_t version, int64_t migration_id, const std::string& reason,
                              int64_t now_ms) {
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  DMOE_RETURN_IF_ERROR(set_state(*db_, version, "aborted", "ended_ms", now_ms));
  DMOE_RETURN_IF_ERROR(end_migration(*db_, migration_id, "aborted", reason, now_ms));
  return txn.commit();
}

Result<std::vector<uint64_t>> Store::abandon_unfinished(const std::string& reason, int64_t now_ms) {
  std::vector<uint64_t> versions;
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  {
    DMOE_ASSIGN_OR_RETURN(Statement s,
                          db_->prepare("SELECT version FROM placements WHERE state = 'preparing'"));
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
      if (!row) break;
      versions.push_back(u64(s.column_int(0)));
    }
  }
  DMOE_ASSIGN_OR_RETURN(Statement p,
                        db_->prepare("UPDATE placements SET state = 'aborted', ended_ms = ? "
                                     "WHERE state = 'preparing'"));
  p.bind(1, now_ms);
  DMOE_RETURN_IF_ERROR(p.run());
  DMOE_ASSIGN_OR_RETURN(Statement m,
                        db_->prepare("UPDATE migrations SET outcome = 'aborted', reason = ?, "
                                     "ended_ms = ? WHERE outcome = 'preparing'"));
  m.bind(1, reason).bind(2, now_ms);
  DMOE_RETURN_IF_ERROR(m.run());
  DMOE_RETURN_IF_ERROR(txn.commit());
  return versions;
}

Status Store::record_decision(DecisionRecord* decision) {
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  DMOE_RETURN_IF_ERROR(insert_decision(*db_, decision));
  return txn.commit();
}

Result<std::vector<DecisionRecord>> Store::recent_decisions(int limit) {
  std::vector<DecisionRecord> out;
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT id, time_ms, trigger, policy, outcome, cost_current_s, cost_new_s, "
                   "migration_s, migration_bytes, local_hit_ratio_current, local_hit_ratio_new, "
                   "window_s, n_nodes, from_version, version, message FROM decisions "
                   "ORDER BY id DESC LIMIT ?"));
  s.bind(1, static_cast<int64_t>(limit));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    DecisionRecord d;
    d.id = s.column_int(0);
    d.time_ms = s.column_int(1);
    d.trigger = s.column_text(2);
    d.policy = s.column_text(3);
    d.outcome = s.column_text(4);
    d.cost_current_s = s.column_double(5);
    d.cost_new_s = s.column_double(6);
    d.migration_s = s.column_double(7);
    d.migration_bytes = u64(s.column_int(8));
    d.local_hit_ratio_current = s.column_double(9);
    d.local_hit_ratio_new = s.column_double(10);
    d.window_s = s.column_double(11);
    d.n_nodes = s.column_int(12);
    d.from_version = u64(s.column_int(13));
    d.version = u64(s.column_int(14));
    d.message = s.column_text(15);
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::vector<MigrationRecord>> Store::recent_migrations(int limit) {
  std::vector<MigrationRecord> out;
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT id, from_version, to_version, trigger, started_ms, ended_ms, bytes, "
                   "n_nodes, outcome, reason FROM migrations ORDER BY id DESC LIMIT ?"));
  s.bind(1, static_cast<int64_t>(limit));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    MigrationRecord m;
    m.id = s.column_int(0);
    m.from_version = u64(s.column_int(1));
    m.to_version = u64(s.column_int(2));
    m.trigger = s.column_text(3);
    m.started_ms = s.column_int(4);
    m.ended_ms = optional_int(s, 5);
    m.bytes = u64(s.column_int(6));
    m.n_nodes = s.column_int(7);
    m.outcome = s.column_text(8);
    m.reason = s.column_text(9);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace dancemoe::store
