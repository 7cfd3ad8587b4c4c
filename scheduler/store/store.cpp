#include "scheduler/store/store.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "scheduler/store/activation_counts.h"
#include "scheduler/store/schema.h"
#include "scheduler/store/sqlite.h"

namespace dancemoe::store {
namespace {

// Aggregate columns shared by the totals queries over `reports` and `rollups`.
void read_totals(const Statement& s, int first, NodeTotals* t) {
  t->n_reports += u64(s.column_int(first + 0));
  t->tokens += u64(s.column_int(first + 1));
  t->requests += u64(s.column_int(first + 2));
  t->activations += u64(s.column_int(first + 3));
  t->local_hits += u64(s.column_int(first + 4));
  t->local_calls += u64(s.column_int(first + 5));
  t->local_latency_sum_us += s.column_double(first + 6);
  t->remote_calls += u64(s.column_int(first + 7));
  t->remote_latency_sum_us += s.column_double(first + 8);
  t->remote_bytes += u64(s.column_int(first + 9));
  t->remote_failures += u64(s.column_int(first + 10));
}

}  // namespace

void NodeTotals::add(const NodeTotals& o) {
  n_reports += o.n_reports;
  tokens += o.tokens;
  requests += o.requests;
  activations += o.activations;
  local_hits += o.local_hits;
  local_calls += o.local_calls;
  local_latency_sum_us += o.local_latency_sum_us;
  remote_calls += o.remote_calls;
  remote_latency_sum_us += o.remote_latency_sum_us;
  remote_bytes += o.remote_bytes;
  remote_failures += o.remote_failures;
  for (const auto& [peer, p] : o.peers) {
    PeerTotals& mine = peers[peer];
    mine.calls += p.calls;
    mine.latency_sum_us += p.latency_sum_us;
    mine.bytes += p.bytes;
    mine.failures += p.failures;
  }
}

std::optional<double> NodeTotals::local_hit_ratio() const {
  if (activations == 0) return std::nullopt;
  return std::min(1.0, static_cast<double>(local_hits) / static_cast<double>(activations));
}

std::optional<double> NodeTotals::local_mean_us() const {
  if (local_calls == 0) return std::nullopt;
  return local_latency_sum_us / static_cast<double>(local_calls);
}

std::optional<double> NodeTotals::remote_mean_us() const {
  if (remote_calls == 0) return std::nullopt;
  return remote_latency_sum_us / static_cast<double>(remote_calls);
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path, const Options& options) {
  std::unique_ptr<Store> store(new Store());
  DMOE_ASSIGN_OR_RETURN(store->db_, Database::open(path));
  // Before anything writes: a damaged file is refused with what to do, not
  // half-used until some query fails.
  DMOE_RETURN_IF_ERROR(check_integrity(*store->db_));
  DMOE_RETURN_IF_ERROR(configure_connection(*store->db_, options.synchronous_full));
  DMOE_RETURN_IF_ERROR(migrate_schema(*store->db_));
  DMOE_RETURN_IF_ERROR(store->prepare_statements());
  DMOE_RETURN_IF_ERROR(store->load_watermarks());
  return store;
}

Store::~Store() {
  // Finalize statements before the connection closes (members are destroyed
  // in reverse order, but be explicit: a checkpoint on close needs them gone).
  insert_report_ = Statement();
  insert_peer_ = Statement();
  upsert_device_compute_ = Statement();
  if (db_) (void)db_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

Status Store::prepare_statements() {
  DMOE_ASSIGN_OR_RETURN(
      insert_report_,
      db_->prepare("INSERT OR IGNORE INTO reports(node_id, sequence, window_start_ms, "
                   "window_end_ms, received_ms, tokens, requests, activations, local_hits, "
                   "local_calls, local_mean_us, local_p99_us, remote_calls, remote_mean_us, "
                   "remote_p99_us, remote_bytes, remote_failures, placement_version, counts, "
                   "pairs) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  DMOE_ASSIGN_OR_RETURN(insert_peer_,
                        db_->prepare("INSERT OR REPLACE INTO report_peers(report_id, peer, calls, "
                                     "mean_us, p99_us, bytes, failures) VALUES(?,?,?,?,?,?,?)"));
  // The same decay as DeviceRecord::add_compute (records.h).
  DMOE_ASSIGN_OR_RETURN(
      upsert_device_compute_,
      db_->prepare("INSERT INTO device_compute(node_id, device, pairs, busy_us, updated_ms) "
                   "VALUES(?1,?2,?3,?4,?5) ON CONFLICT(node_id, device) DO UPDATE SET "
                   "pairs = pairs * ?6 + excluded.pairs, busy_us = busy_us * ?6 + "
                   "excluded.busy_us, updated_ms = excluded.updated_ms"));
  return Status::ok();
}

Status Store::load_watermarks() {
  DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT node_id, window_end_ms FROM watermarks"));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    watermarks_[s.column_text(0)] = s.column_int(1);
  }
  return Status::ok();
}

Status Store::bind_identity(const std::string& model_id, const std::string& cluster_id) {
  const std::pair<const char*, const std::string*> keys[] = {{"model_id", &model_id},
                                                             {"cluster_id", &cluster_id}};
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  for (const auto& [key, value] : keys) {
    DMOE_ASSIGN_OR_RETURN(Statement get, db_->prepare("SELECT value FROM meta WHERE key = ?"));
    get.bind(1, std::string_view(key));
    DMOE_ASSIGN_OR_RETURN(const bool row, get.step());
    if (row) {
      const std::string stored = get.column_text(0);
      if (stored != *value) {
        return failed_precondition(path() + ": the database belongs to " + key + " '" + stored +
                                   "', this scheduler serves " + key + " '" + *value +
                                   "' (use another --db for another model or cluster)");
      }
      continue;
    }
    DMOE_ASSIGN_OR_RETURN(Statement put, db_->prepare("INSERT INTO meta(key, value) VALUES(?,?)"));
    put.bind(1, std::string_view(key)).bind(2, std::string_view(*value));
    DMOE_RETURN_IF_ERROR(put.run());
  }
  return txn.commit();
}

Status Store::save_node(const NodeRecord& node) {
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  DMOE_ASSIGN_OR_RETURN(
      Statement upsert,
      db_->prepare("INSERT INTO nodes(node_id, first_registered_ms, last_registered_ms, "
                   "expert_endpoint, http_endpoint, host_memory_bytes, placement_version) "
                   "VALUES(?,?,?,?,?,?,?) ON CONFLICT(node_id) DO UPDATE SET "
                   "last_registered_ms = excluded.last_registered_ms, "
                   "expert_endpoint = excluded.expert_endpoint, "
                   "http_endpoint = excluded.http_endpoint, "
                   "host_memory_bytes = excluded.host_memory_bytes, "
                   "placement_version = excluded.placement_version"));
  upsert.bind(1, node.node_id)
      .bind(2, node.first_registered_ms)
      .bind(3, node.last_registered_ms)
      .bind(4, node.expert_endpoint)
      .bind(5, node.http_endpoint)
      .bind(6, i64(node.host_memory_bytes))
      .bind(7, i64(node.placement_version));
  DMOE_RETURN_IF_ERROR(upsert.run());
  DMOE_ASSIGN_OR_RETURN(Statement clear, db_->prepare("DELETE FROM devices WHERE node_id = ?"));
  clear.bind(1, node.node_id);
  DMOE_RETURN_IF_ERROR(clear.run());
  DMOE_ASSIGN_OR_RETURN(Statement device,
                        db_->prepare("INSERT INTO devices(node_id, device_idx, name, "
                                     "expert_budget_bytes, load_bytes_per_s, kind) "
                                     "VALUES(?,?,?,?,?,?)"));
  for (size_t g = 0; g < node.devices.size(); ++g) {
    device.bind(1, node.node_id)
        .bind(2, static_cast<int64_t>(g))
        .bind(3, node.devices[g].name)
        .bind(4, i64(node.devices[g].expert_budget_bytes))
        .bind(5, node.devices[g].load_bytes_per_s)
        .bind(6, node.devices[g].kind);
    DMOE_RETURN_IF_ERROR(device.run());
  }
  return txn.commit();
}

Result<std::vector<NodeRecord>> Store::load_nodes() {
  std::vector<NodeRecord> nodes;
  DMOE_ASSIGN_OR_RETURN(Statement s,
                        db_->prepare("SELECT node_id, first_registered_ms, last_registered_ms, "
                                     "expert_endpoint, http_endpoint, host_memory_bytes, "
                                     "placement_version FROM nodes ORDER BY node_id"));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    NodeRecord n;
    n.node_id = s.column_text(0);
    n.first_registered_ms = s.column_int(1);
    n.last_registered_ms = s.column_int(2);
    n.expert_endpoint = s.column_text(3);
    n.http_endpoint = s.column_text(4);
    n.host_memory_bytes = u64(s.column_int(5));
    n.placement_version = u64(s.column_int(6));
    nodes.push_back(std::move(n));
  }
  DMOE_ASSIGN_OR_RETURN(Statement d,
                        db_->prepare("SELECT d.name, d.expert_budget_bytes, d.load_bytes_per_s, "
                                     "d.kind, c.pairs, c.busy_us FROM devices d LEFT JOIN "
                                     "device_compute c ON c.node_id = d.node_id AND c.device = "
                                     "d.name WHERE d.node_id = ? ORDER BY d.device_idx"));
  for (NodeRecord& n : nodes) {
    d.reset();
    d.bind(1, n.node_id);
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, d.step());
      if (!row) break;
      DeviceRecord device;
      device.name = d.column_text(0);
      device.expert_budget_bytes = u64(d.column_int(1));
      device.load_bytes_per_s = d.column_double(2);
      device.kind = d.column_text(3);
      device.compute_pairs = d.column_double(4);  // NULL (never measured) reads as 0
      device.compute_busy_us = d.column_double(5);
      n.devices.push_back(std::move(device));
    }
  }
  return nodes;
}

Result<InsertOutcome> Store::insert_report(const ReportRecord& r) {
  const auto watermark = watermarks_.find(r.node_id);
  if (watermark != watermarks_.end() && r.window_end_ms <= watermark->second) {
    return InsertOutcome::kStale;
  }
  uint64_t remote_calls = 0, remote_bytes = 0, remote_failures = 0;
  double remote_latency_sum = 0.0, remote_p99 = 0.0;
  for (const proto::PeerCallStats& p : r.peers) {
    remote_calls += p.calls;
    remote_latency_sum += static_cast<double>(p.calls) * p.mean_latency_us;
    remote_p99 = std::max(remote_p99, p.p99_latency_us);
    remote_bytes += p.bytes;
    remote_failures += p.failures;
  }
  const double remote_mean =
      remote_calls > 0 ? remote_latency_sum / static_cast<double>(remote_calls) : 0.0;
  const std::vector<uint8_t> blob = encode_counts(r.counts);

  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  insert_report_.reset();
  insert_report_.bind(1, r.node_id)
      .bind(2, i64(r.sequence))
      .bind(3, r.window_start_ms)
      .bind(4, r.window_end_ms)
      .bind(5, r.received_ms)
      .bind(6, i64(r.tokens))
      .bind(7, i64(r.requests))
      .bind(8, i64(r.activations))
      .bind(9, i64(r.local_hits))
      .bind(10, i64(r.local_calls))
      .bind(11, r.local_mean_us)
      .bind(12, r.local_p99_us)
      .bind(13, i64(remote_calls))
      .bind(14, remote_mean)
      .bind(15, remote_p99)
      .bind(16, i64(remote_bytes))
      .bind(17, i64(remote_failures))
      .bind(18, i64(r.placement_version))
      .bind_blob(19, blob)
      .bind_blob(20, encode_pairs(r.pairs));
  DMOE_RETURN_IF_ERROR(insert_report_.run());
  if (db_->changes() == 0) return InsertOutcome::kDuplicate;  // txn rolls back: nothing written
  const int64_t report_id = db_->last_insert_rowid();
  for (const proto::PeerCallStats& p : r.peers) {
    insert_peer_.reset();
    insert_peer_.bind(1, report_id)
        .bind(2, p.peer)
        .bind(3, i64(p.calls))
        .bind(4, p.mean_latency_us)
        .bind(5, p.p99_latency_us)
        .bind(6, i64(p.bytes))
        .bind(7, i64(p.failures));
    DMOE_RETURN_IF_ERROR(insert_peer_.run());
  }
  for (const proto::DeviceCompute& d : r.devices) {
    upsert_device_compute_.reset();
    upsert_device_compute_.bind(1, r.node_id)
        .bind(2, d.device)
        .bind(3, static_cast<double>(d.pairs))
        .bind(4, d.busy_us)
        .bind(5, r.received_ms)
        .bind(6, kDeviceComputeDecay);
    DMOE_RETURN_IF_ERROR(upsert_device_compute_.run());
  }
  DMOE_RETURN_IF_ERROR(txn.commit());
  ++n_reports_inserted_;
  return InsertOutcome::kStored;
}

Result<std::map<std::string, NodeTotals>> Store::totals_since(
    int64_t since_ms, std::optional<uint64_t> placement_version) {
  std::map<std::string, NodeTotals> out;
  static const char* kRaw =
      "SELECT node_id, count(*), sum(tokens), sum(requests), sum(activations), sum(local_hits), "
      "sum(local_calls), total(local_calls * local_mean_us), sum(remote_calls), "
      "total(remote_calls * remote_mean_us), sum(remote_bytes), sum(remote_failures) "
      "FROM reports WHERE received_ms >= ? AND (? < 0 OR placement_version = ?) "
      "GROUP BY node_id";
  static const char* kRolled =
      "SELECT node_id, sum(n_reports), sum(tokens), sum(requests), sum(activations), "
      "sum(local_hits), sum(local_calls), total(local_latency_sum_us), sum(remote_calls), "
      "total(remote_latency_sum_us), sum(remote_bytes), sum(remote_failures) "
      "FROM rollups WHERE bucket_start_ms + bucket_ms > ? GROUP BY node_id";
  // -1: any version. Roll-up buckets do not keep versions: they count by time.
  const int64_t version = placement_version ? static_cast<int64_t>(*placement_version) : -1;
  for (const char* sql : {kRaw, kRolled}) {
    DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare(sql));
    s.bind(1, since_ms);
    if (sql == kRaw) {
      s.bind(2, version);
      s.bind(3, version);
    }
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
      if (!row) break;
      read_totals(s, 1, &out[s.column_text(0)]);
    }
  }
  static const char* kRawPeers =
      "SELECT r.node_id, p.peer, sum(p.calls), total(p.calls * p.mean_us), sum(p.bytes), "
      "sum(p.failures) FROM report_peers p JOIN reports r ON r.id = p.report_id "
      "WHERE r.received_ms >= ? AND (? < 0 OR r.placement_version = ?) "
      "GROUP BY r.node_id, p.peer";
  static const char* kRolledPeers =
      "SELECT node_id, peer, sum(calls), total(latency_sum_us), sum(bytes), sum(failures) "
      "FROM rollup_peers WHERE bucket_start_ms + bucket_ms > ? GROUP BY node_id, peer";
  // Raw windows and roll-ups have the same columns: add both into `out`.
  auto add_peers = [&](Statement& s) -> Status {
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
      if (!row) return Status::ok();
      PeerTotals& p = out[s.column_text(0)].peers[s.column_text(1)];
      p.calls += u64(s.column_int(2));
      p.latency_sum_us += s.column_double(3);
      p.bytes += u64(s.column_int(4));
      p.failures += u64(s.column_int(5));
    }
  };
  DMOE_ASSIGN_OR_RETURN(Statement raw, db_->prepare(kRawPeers));
  raw.bind(1, since_ms);
  raw.bind(2, version);
  raw.bind(3, version);
  DMOE_RETURN_IF_ERROR(add_peers(raw));
  DMOE_ASSIGN_OR_RETURN(Statement rolled, db_->prepare(kRolledPeers));
  rolled.bind(1, since_ms);
  DMOE_RETURN_IF_ERROR(add_peers(rolled));
  return out;
}

Result<std::map<std::string, std::vector<double>>> Store::counts_since(int64_t since_ms,
                                                                       const CountIndex& index) {
  return read_counts_since(*db_, since_ms, index);
}

Result<std::map<std::string, Store::PairCounts>> Store::pairs_since(int64_t since_ms,
                                                                    const CountIndex& index) {
  std::map<std::string, PairCounts> out;
  static const char* kQueries[] = {
      "SELECT node_id, pairs FROM reports WHERE received_ms >= ?",
      "SELECT node_id, pairs FROM rollups WHERE bucket_start_ms + bucket_ms > ?"};
  for (const char* sql : kQueries) {
    DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare(sql));
    s.bind(1, since_ms);
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
      if (!row) break;
      const std::string id = s.column_text(0);
      PairCounts& pairs = out[id];
      DMOE_RETURN_IF_ERROR(
          decode_pairs(s.column_blob_view(1), [&pairs, &index](const PairEntry& e) {
            const int32_t a = index.flat(e.layer, e.a);
            const int32_t b = index.flat(e.layer, e.b);
            if (a >= 0 && b >= 0) pairs[{a, b}] += static_cast<double>(e.count);
          }).with_context(path() + ": co-activation pairs of node " + id));
    }
  }
  return out;
}

Result<std::map<std::string, ReportRecord>> Store::latest_reports() {
  std::map<std::string, ReportRecord> out;
  DMOE_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT node_id, sequence, window_start_ms, window_end_ms, received_ms, tokens, "
                   "requests, activations, local_hits, local_calls, local_mean_us, local_p99_us, "
                   "placement_version FROM reports WHERE id IN "
                   "(SELECT max(id) FROM reports GROUP BY node_id)"));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    ReportRecord r;
    r.node_id = s.column_text(0);
    r.sequence = u64(s.column_int(1));
    r.window_start_ms = s.column_int(2);
    r.window_end_ms = s.column_int(3);
    r.received_ms = s.column_int(4);
    r.tokens = u64(s.column_int(5));
    r.requests = u64(s.column_int(6));
    r.activations = u64(s.column_int(7));
    r.local_hits = u64(s.column_int(8));
    r.local_calls = u64(s.column_int(9));
    r.local_mean_us = s.column_double(10);
    r.local_p99_us = s.column_double(11);
    r.placement_version = u64(s.column_int(12));
    out[r.node_id] = std::move(r);
  }
  return out;
}

uint64_t Store::file_bytes() const {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path() + suffix, ec);
    if (!ec) total += size;
  }
  return total;
}

}  // namespace dancemoe::store
