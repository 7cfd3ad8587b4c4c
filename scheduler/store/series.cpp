#include "scheduler/store/series.h"

#include "scheduler/store/activation_counts.h"
#include "scheduler/store/schema.h"
#include "scheduler/store/sqlite.h"

namespace dancemoe::store {
namespace {

// Binds ?1 = from, ?2 = step, ?3 = end: every query below buckets with them.
void bind_range(Statement& s, const SeriesRange& r) {
  s.bind(1, r.from_ms).bind(2, r.step_ms).bind(3, r.end_ms());
}

// The bucket of a row, or -1 when the row lies outside the range (a
// statement's filter already excludes those; this guards the vectors).
int64_t bucket_of(const Statement& s, int column, const SeriesRange& r) {
  const int64_t b = s.column_int(column);
  return b >= 0 && b < r.n_buckets ? b : -1;
}

NodeSeries& node_series(ClusterSeries* out, const std::string& id) {
  NodeSeries& n = out->nodes[id];
  if (n.activations.empty()) {
    const size_t size = static_cast<size_t>(out->range.n_buckets);
    for (auto* v : {&n.activations, &n.local_hits, &n.tokens, &n.requests, &n.remote_calls,
                    &n.remote_bytes}) {
      v->assign(size, 0);
    }
  }
  return n;
}

PeerSeries& peer_series(ClusterSeries* out, const std::string& id) {
  PeerSeries& p = out->peers[id];
  if (p.calls.empty()) {
    p.calls.assign(static_cast<size_t>(out->range.n_buckets), 0);
    p.latency_sum_us.assign(static_cast<size_t>(out->range.n_buckets), 0.0);
  }
  return p;
}

}  // namespace

Result<std::unique_ptr<SeriesReader>> SeriesReader::open(const std::string& path) {
  if (path == ":memory:" || path.empty()) {
    return failed_precondition(
        "an in-memory database has no history to read from another "
        "connection (use a --db file)");
  }
  Database::Options options;
  options.read_only = true;
  options.create = false;
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::open(path, options));
  DMOE_RETURN_IF_ERROR(db->exec("PRAGMA query_only=ON"));
  DMOE_ASSIGN_OR_RETURN(const int version, schema_version(*db));
  if (version != kSchemaVersion) {
    return failed_precondition(path + ": schema version " + std::to_string(version) +
                               ", this build reads version " + std::to_string(kSchemaVersion));
  }
  return std::unique_ptr<SeriesReader>(new SeriesReader(std::move(db)));
}

Result<ClusterSeries> SeriesReader::series(const SeriesRange& range) {
  if (range.n_buckets < 1 || range.n_buckets > 10000 || range.step_ms < 1) {
    return invalid_argument("series: expected 1 to 10000 buckets of at least 1 ms, got " +
                            std::to_string(range.n_buckets) + " of " +
                            std::to_string(range.step_ms) + " ms");
  }
  ClusterSeries out;
  out.range = range;
  out.migration_bytes.assign(static_cast<size_t>(range.n_buckets), 0);
  // One read transaction: every part sees the same committed state.
  DMOE_RETURN_IF_ERROR(db_->exec("BEGIN"));
  Status status = read_nodes(range, &out);
  if (status.is_ok()) status = read_peers(range, &out);
  if (status.is_ok()) status = read_migrations(range, &out);
  if (status.is_ok()) status = read_placements(range, &out);
  (void)db_->exec("COMMIT");
  DMOE_RETURN_IF_ERROR(status);
  return out;
}

Status SeriesReader::read_nodes(const SeriesRange& range, ClusterSeries* out) {
  static const char* kQueries[] = {
      "SELECT node_id, (received_ms - ?1) / ?2, sum(activations), sum(local_hits), sum(tokens), "
      "sum(requests), sum(remote_calls), sum(remote_bytes) FROM reports "
      "WHERE received_ms >= ?1 AND received_ms < ?3 GROUP BY 1, 2",
      "SELECT node_id, (bucket_start_ms - ?1) / ?2, sum(activations), sum(local_hits), "
      "sum(tokens), sum(requests), sum(remote_calls), sum(remote_bytes) FROM rollups "
      "WHERE bucket_start_ms >= ?1 AND bucket_start_ms < ?3 GROUP BY 1, 2"};
  for (const char* sql : kQueries) {
    DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare(sql));
    bind_range(s, range);
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
      if (!row) break;
      const int64_t b = bucket_of(s, 1, range);
      if (b < 0) continue;
      NodeSeries& n = node_series(out, s.column_text(0));
      const auto i = static_cast<size_t>(b);
      n.activations[i] += u64(s.column_int(2));
      n.local_hits[i] += u64(s.column_int(3));
      n.tokens[i] += u64(s.column_int(4));
      n.requests[i] += u64(s.column_int(5));
      n.remote_calls[i] += u64(s.column_int(6));
      n.remote_bytes[i] += u64(s.column_int(7));
    }
  }
  return Status::ok();
}

Status SeriesReader::read_peers(const SeriesRange& range, ClusterSeries* out) {
  static const char* kQueries[] = {
      "SELECT p.peer, (r.received_ms - ?1) / ?2, sum(p.calls), total(p.calls * p.mean_us) "
      "FROM report_peers p JOIN reports r ON r.id = p.report_id "
      "WHERE r.received_ms >= ?1 AND r.received_ms < ?3 GROUP BY 1, 2",
      "SELECT peer, (bucket_start_ms - ?1) / ?2, sum(calls), total(latency_sum_us) "
      "FROM rollup_peers WHERE bucket_start_ms >= ?1 AND bucket_start_ms < ?3 GROUP BY 1, 2"};
  for (const char* sql : kQueries) {
    DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare(sql));
    bind_range(s, range);
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
      if (!row) break;
      const int64_t b = bucket_of(s, 1, range);
      if (b < 0) continue;
      PeerSeries& p = peer_series(out, s.column_text(0));
      p.calls[static_cast<size_t>(b)] += u64(s.column_int(2));
      p.latency_sum_us[static_cast<size_t>(b)] += s.column_double(3);
    }
  }
  return Status::ok();
}

Status SeriesReader::read_migrations(const SeriesRange& range, ClusterSeries* out) {
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT (ended_ms - ?1) / ?2, sum(bytes) FROM migrations "
                   "WHERE outcome = 'committed' AND ended_ms >= ?1 AND ended_ms < ?3 GROUP BY 1"));
  bind_range(s, range);
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    const int64_t b = bucket_of(s, 0, range);
    if (b >= 0) out->migration_bytes[static_cast<size_t>(b)] += u64(s.column_int(1));
  }
  return Status::ok();
}

Status SeriesReader::read_placements(const SeriesRange& range, ClusterSeries* out) {
  DMOE_ASSIGN_OR_RETURN(
      Statement s, db_->prepare("SELECT version, committed_ms, policy, trigger FROM placements "
                                "WHERE committed_ms >= ?1 AND committed_ms < ?2 "
                                "ORDER BY committed_ms, version"));
  s.bind(1, range.from_ms).bind(2, range.end_ms());
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    out->placements.push_back(
        {u64(s.column_int(0)), s.column_int(1), s.column_text(2), s.column_text(3)});
  }
  return Status::ok();
}

Result<std::map<std::string, std::vector<double>>> SeriesReader::heat(int64_t since_ms,
                                                                      const CountIndex& index) {
  return read_counts_since(*db_, since_ms, index);
}

Result<std::optional<PlacementMark>> SeriesReader::committed() {
  DMOE_ASSIGN_OR_RETURN(Statement s,
                        db_->prepare("SELECT version, coalesce(committed_ms, created_ms), policy, "
                                     "trigger FROM placements WHERE state = 'committed' "
                                     "ORDER BY version DESC LIMIT 1"));
  DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
  if (!row) return std::optional<PlacementMark>();
  return std::optional<PlacementMark>(
      PlacementMark{u64(s.column_int(0)), s.column_int(1), s.column_text(2), s.column_text(3)});
}

}  // namespace dancemoe::store
