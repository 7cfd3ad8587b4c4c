#include "scheduler/store/retention.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler/store/sqlite.h"

namespace dancemoe::store {
namespace {

struct Bucket {
  NodeTotals totals;
  std::map<uint32_t, uint64_t> counts;  // layer << 16 | expert -> count
  std::map<uint64_t, uint64_t> pairs;   // layer << 32 | a << 16 | b -> count
};

using BucketKey = std::pair<std::string, int64_t>;  // node, bucket start

void add_counts(std::map<uint32_t, uint64_t>& into, std::span<const uint8_t> blob, Status* status) {
  *status = decode_counts(blob, [&into](const CountEntry& e) {
    into[(static_cast<uint32_t>(e.layer) << 16) | e.expert] += e.count;
  });
}

void add_pairs(std::map<uint64_t, uint64_t>& into, std::span<const uint8_t> blob, Status* status) {
  *status = decode_pairs(blob, [&into](const PairEntry& e) {
    into[(static_cast<uint64_t>(e.layer) << 32) | (static_cast<uint64_t>(e.a) << 16) | e.b] +=
        e.count;
  });
}

// The bucket's pairs, at most `per_layer` per layer: those most above
// independence given the bucket's counts and tokens, as a node selects them
// (common/placement/coactivation.h); ties: the larger count, then the key.
std::vector<uint8_t> encode_pair_map(const Bucket& b, int per_layer) {
  const double tokens = static_cast<double>(std::max<uint64_t>(b.totals.tokens, 1));
  auto use = [&](uint64_t layer, uint64_t expert) {
    const auto it = b.counts.find(static_cast<uint32_t>((layer << 16) | expert));
    return it == b.counts.end() ? 0.0 : static_cast<double>(it->second);
  };
  std::map<uint16_t, std::vector<std::pair<double, PairEntry>>> by_layer;
  for (const auto& [key, count] : b.pairs) {
    const PairEntry e{static_cast<uint16_t>(key >> 32), static_cast<uint16_t>((key >> 16) & 0xffff),
                      static_cast<uint16_t>(key & 0xffff), count};
    const double excess =
        static_cast<double>(count) - use(e.layer, e.a) * use(e.layer, e.b) / tokens;
    by_layer[e.layer].push_back({excess, e});
  }
  std::vector<PairEntry> kept;
  for (auto& [layer, entries] : by_layer) {
    std::sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first > y.first;
      if (x.second.count != y.second.count) return x.second.count > y.second.count;
      return std::tie(x.second.a, x.second.b) < std::tie(y.second.a, y.second.b);
    });
    if (entries.size() > static_cast<size_t>(per_layer)) entries.resize(per_layer);
    for (const auto& entry : entries) kept.push_back(entry.second);
  }
  std::sort(kept.begin(), kept.end(), [](const PairEntry& x, const PairEntry& y) {
    return std::tie(x.layer, x.a, x.b) < std::tie(y.layer, y.a, y.b);
  });
  return encode_pairs(kept);
}

std::vector<uint8_t> encode_map(const std::map<uint32_t, uint64_t>& counts) {
  std::vector<CountEntry> entries;
  entries.reserve(counts.size());
  for (const auto& [key, count] : counts) {
    entries.push_back(
        {static_cast<uint16_t>(key >> 16), static_cast<uint16_t>(key & 0xffff), count});
  }
  return encode_counts(entries);
}

// Reads up to `limit` raw reports older than `cutoff_ms` into buckets.
Status collect(Database& db, int64_t cutoff_ms, int64_t bucket_ms, int limit,
               std::map<BucketKey, Bucket>* buckets, std::vector<int64_t>* ids,
               std::map<std::string, int64_t>* newest_window_end) {
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db.prepare("SELECT id, node_id, received_ms, window_end_ms, tokens, requests, activations, "
                 "local_hits, local_calls, local_calls * local_mean_us, remote_calls, "
                 "remote_calls * remote_mean_us, remote_bytes, remote_failures, counts, pairs "
                 "FROM reports WHERE received_ms < ? ORDER BY id LIMIT ?"));
  DMOE_ASSIGN_OR_RETURN(Statement peers,
                        db.prepare("SELECT peer, calls, calls * mean_us, bytes, failures FROM "
                                   "report_peers WHERE report_id = ?"));
  s.bind(1, cutoff_ms).bind(2, static_cast<int64_t>(limit));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    const int64_t id = s.column_int(0);
    const std::string node = s.column_text(1);
    const int64_t received = s.column_int(2);
    const int64_t start = received - ((received % bucket_ms) + bucket_ms) % bucket_ms;
    Bucket& b = (*buckets)[{node, start}];
    NodeTotals& t = b.totals;
    t.n_reports += 1;
    t.tokens += u64(s.column_int(4));
    t.requests += u64(s.column_int(5));
    t.activations += u64(s.column_int(6));
    t.local_hits += u64(s.column_int(7));
    t.local_calls += u64(s.column_int(8));
    t.local_latency_sum_us += s.column_double(9);
    t.remote_calls += u64(s.column_int(10));
    t.remote_latency_sum_us += s.column_double(11);
    t.remote_bytes += u64(s.column_int(12));
    t.remote_failures += u64(s.column_int(13));
    Status decoded;
    add_counts(b.counts, s.column_blob_view(14), &decoded);
    DMOE_RETURN_IF_ERROR(decoded.with_context(db.path() + ": report " + std::to_string(id)));
    add_pairs(b.pairs, s.column_blob_view(15), &decoded);
    DMOE_RETURN_IF_ERROR(decoded.with_context(db.path() + ": report " + std::to_string(id)));
    int64_t& newest = (*newest_window_end)[node];
    newest = std::max(newest, s.column_int(3));

    peers.reset();
    peers.bind(1, id);
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool prow, peers.step());
      if (!prow) break;
      PeerTotals& p = t.peers[peers.column_text(0)];
      p.calls += u64(peers.column_int(1));
      p.latency_sum_us += peers.column_double(2);
      p.bytes += u64(peers.column_int(3));
      p.failures += u64(peers.column_int(4));
    }
    ids->push_back(id);
  }
  return Status::ok();
}

// Adds `b` to the stored bucket (node, start), creating it if needed.
Status merge_bucket(Database& db, const BucketKey& key, const RetentionPolicy& policy, Bucket& b) {
  const int64_t bucket_ms = policy.bucket_ms;
  DMOE_ASSIGN_OR_RETURN(
      Statement get,
      db.prepare("SELECT n_reports, tokens, requests, activations, local_hits, local_calls, "
                 "local_latency_sum_us, remote_calls, remote_latency_sum_us, remote_bytes, "
                 "remote_failures, counts, pairs FROM rollups WHERE node_id = ? AND "
                 "bucket_start_ms = ?"));
  get.bind(1, key.first).bind(2, key.second);
  DMOE_ASSIGN_OR_RETURN(const bool exists, get.step());
  NodeTotals& t = b.totals;
  if (exists) {
    NodeTotals old;
    old.n_reports = u64(get.column_int(0));
    old.tokens = u64(get.column_int(1));
    old.requests = u64(get.column_int(2));
    old.activations = u64(get.column_int(3));
    old.local_hits = u64(get.column_int(4));
    old.local_calls = u64(get.column_int(5));
    old.local_latency_sum_us = get.column_double(6);
    old.remote_calls = u64(get.column_int(7));
    old.remote_latency_sum_us = get.column_double(8);
    old.remote_bytes = u64(get.column_int(9));
    old.remote_failures = u64(get.column_int(10));
    t.add(old);  // old.peers is empty: stored peer sums are added by the upsert below
    Status decoded;
    add_counts(b.counts, get.column_blob_view(11), &decoded);
    DMOE_RETURN_IF_ERROR(decoded.with_context(db.path() + ": roll-up of " + key.first));
    add_pairs(b.pairs, get.column_blob_view(12), &decoded);
    DMOE_RETURN_IF_ERROR(decoded.with_context(db.path() + ": roll-up of " + key.first));
  }
  get.reset();
  DMOE_ASSIGN_OR_RETURN(
      Statement put,
      db.prepare("INSERT OR REPLACE INTO rollups(node_id, bucket_start_ms, bucket_ms, n_reports, "
                 "tokens, requests, activations, local_hits, local_calls, local_latency_sum_us, "
                 "remote_calls, remote_latency_sum_us, remote_bytes, remote_failures, counts, "
                 "pairs) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  put.bind(1, key.first)
      .bind(2, key.second)
      .bind(3, bucket_ms)
      .bind(4, i64(t.n_reports))
      .bind(5, i64(t.tokens))
      .bind(6, i64(t.requests))
      .bind(7, i64(t.activations))
      .bind(8, i64(t.local_hits))
      .bind(9, i64(t.local_calls))
      .bind(10, t.local_latency_sum_us)
      .bind(11, i64(t.remote_calls))
      .bind(12, t.remote_latency_sum_us)
      .bind(13, i64(t.remote_bytes))
      .bind(14, i64(t.remote_failures))
      .bind_blob(15, encode_map(b.counts))
      .bind_blob(16, encode_pair_map(b, policy.rollup_pairs_per_layer));
  DMOE_RETURN_IF_ERROR(put.run());
  DMOE_ASSIGN_OR_RETURN(
      Statement peer,
      db.prepare("INSERT INTO rollup_peers(node_id, bucket_start_ms, bucket_ms, peer, calls, "
                 "latency_sum_us, bytes, failures) VALUES(?,?,?,?,?,?,?,?) "
                 "ON CONFLICT(node_id, bucket_start_ms, peer) DO UPDATE SET "
                 "calls = calls + excluded.calls, "
                 "latency_sum_us = latency_sum_us + excluded.latency_sum_us, "
                 "bytes = bytes + excluded.bytes, failures = failures + excluded.failures"));
  for (const auto& [name, p] : t.peers) {
    peer.reset();
    peer.bind(1, key.first)
        .bind(2, key.second)
        .bind(3, bucket_ms)
        .bind(4, name)
        .bind(5, i64(p.calls))
        .bind(6, p.latency_sum_us)
        .bind(7, i64(p.bytes))
        .bind(8, i64(p.failures));
    DMOE_RETURN_IF_ERROR(peer.run());
  }
  return Status::ok();
}

Result<int64_t> delete_old(Database& db, const RetentionPolicy& policy, int64_t now_ms) {
  const int64_t cutoff = now_ms - policy.rollup_retention_ms;
  int64_t deleted = 0;
  const char* by_time[] = {
      "DELETE FROM rollups WHERE bucket_start_ms + bucket_ms < ?",
      "DELETE FROM rollup_peers WHERE bucket_start_ms + bucket_ms < ?",
      "DELETE FROM decisions WHERE time_ms < ?",
      "DELETE FROM migrations WHERE ended_ms IS NOT NULL AND ended_ms < ?",
  };
  for (const char* sql : by_time) {
    DMOE_ASSIGN_OR_RETURN(Statement s, db.prepare(sql));
    s.bind(1, cutoff);
    DMOE_RETURN_IF_ERROR(s.run());
    deleted += db.changes();
  }
  // Expert lists of old versions; the committed one and any in progress stay.
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> max_version,
                        db.query_int("SELECT max(version) FROM placements"));
  if (max_version) {
    const int64_t keep_from = *max_version - policy.keep_placement_versions + 1;
    for (const char* table : {"placement_entries", "placement_nodes"}) {
      DMOE_ASSIGN_OR_RETURN(
          Statement s,
          db.prepare(std::string("DELETE FROM ") + table +
                     " WHERE version < ? AND version NOT IN (SELECT version FROM placements "
                     "WHERE state IN ('committed', 'preparing'))"));
      s.bind(1, keep_from);
      DMOE_RETURN_IF_ERROR(s.run());
      deleted += db.changes();
    }
  }
  return deleted;
}

}  // namespace

Result<RetentionStats> Retention::apply(Store& store, const RetentionPolicy& policy,
                                        int64_t now_ms) {
  if (policy.bucket_ms <= 0 || policy.raw_retention_ms < 0 || policy.rollup_retention_ms < 0 ||
      policy.batch_reports <= 0) {
    return invalid_argument("retention policy: bucket, retention times and batch must be positive");
  }
  Database& db = store.db();
  RetentionStats stats;
  std::map<BucketKey, Bucket> buckets;
  std::vector<int64_t> ids;
  std::map<std::string, int64_t> newest;
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(db));
  DMOE_RETURN_IF_ERROR(collect(db, now_ms - policy.raw_retention_ms, policy.bucket_ms,
                               policy.batch_reports, &buckets, &ids, &newest));
  for (auto& [key, bucket] : buckets) {
    DMOE_RETURN_IF_ERROR(merge_bucket(db, key, policy, bucket));
  }
  DMOE_ASSIGN_OR_RETURN(Statement del_peers,
                        db.prepare("DELETE FROM report_peers WHERE report_id = ?"));
  DMOE_ASSIGN_OR_RETURN(Statement del_report, db.prepare("DELETE FROM reports WHERE id = ?"));
  for (int64_t id : ids) {
    del_peers.reset();
    del_peers.bind(1, id);
    DMOE_RETURN_IF_ERROR(del_peers.run());
    del_report.reset();
    del_report.bind(1, id);
    DMOE_RETURN_IF_ERROR(del_report.run());
  }
  DMOE_ASSIGN_OR_RETURN(Statement mark,
                        db.prepare("INSERT INTO watermarks(node_id, window_end_ms) VALUES(?,?) "
                                   "ON CONFLICT(node_id) DO UPDATE SET window_end_ms = "
                                   "max(window_end_ms, excluded.window_end_ms)"));
  for (const auto& [node, end] : newest) {
    mark.reset();
    mark.bind(1, node).bind(2, end);
    DMOE_RETURN_IF_ERROR(mark.run());
  }
  DMOE_ASSIGN_OR_RETURN(stats.rows_deleted, delete_old(db, policy, now_ms));
  DMOE_RETURN_IF_ERROR(txn.commit());
  // Only after the commit: the in-memory watermarks follow the file.
  for (const auto& [node, end] : newest) {
    int64_t& mark_ms = store.watermarks_[node];
    mark_ms = std::max(mark_ms, end);
  }
  stats.reports_rolled_up = static_cast<int64_t>(ids.size());
  stats.buckets_written = static_cast<int64_t>(buckets.size());
  stats.more = static_cast<int>(ids.size()) == policy.batch_reports;
  return stats;
}

}  // namespace dancemoe::store
