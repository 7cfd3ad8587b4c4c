// Scheduler ingest (issue 4): the real `dancemoe-scheduler` (a child
// process: temporary directory, SQLite file, 127.0.0.1, ephemeral port) with
// an OLMoE-shaped model (16 MoE layers x 64 experts), and simulated nodes on
// real ZeroMQ DEALER sockets speaking the real protocol: Register, Heartbeat
// at the interval the scheduler gives, and ActivationReports with sparse
// counts per (layer, expert) (about 1,000 non-zero of 1,024) and call
// statistics (local count/mean/p99; per remote peer count, mean, p99, bytes).
//
// Phases (each on fresh node ids, same daemon and database):
//   base: 64 nodes x 1 report/s (the load);
//   10x:  64 nodes x 10 reports/s (the same node count, 10x the rate);
//   640n: 640 nodes x 1 report/s (10x the load as 10x the nodes).
// Per phase it prints: reports acknowledged per second; reports and rows per
// second counted in the SQLite file afterwards (report rows, per-peer rows,
// and the (layer, expert) count entries packed in the report blobs); p50 /
// p99 / max report-to-Ack latency; the daemon's CPU (utime + stime from
// /proc/PID/stat over the phase) as % of one core. The Ack is sent only
// after the report's transaction committed (SchedulerService::on_report:
// Store::insert_report commits, then the Ack is queued; ControlServer sends
// it after handle() returns), so this latency is report-to-commit plus one
// loopback hop.
//
// No placement round runs during the phases (--interval and
// --cold-start-settle are a day): bench_scheduler_round measures rounds.
// The load generator runs in this process, on one thread, on the same
// machine as the daemon: it competes for the same cores.
//
//   build/release/tests/bench_scheduler_ingest [--duration 20] [--phases 64x1,64x10,640x1]
//       [--scheduler PATH] [--tokens 256] [--peers 8] [--tmp DIR] [--keep]
//
// --tmp /dev/shm puts the database on tmpfs: the difference to a run on disk
// is what the WAL checkpoints' fsyncs cost the latency tail.
#include <zmq.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "common/net/poller.h"
#include "common/net/zmq_transport.h"
#include "scheduler/store/count_blob.h"
#include "scheduler/store/sqlite.h"
#include "tests/bench/scheduler_bench_support.h"

using namespace dancemoe;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

struct Phase {
  std::string name;
  int n_nodes = 64;
  double rate_per_s = 1.0;
};

struct Options {
  std::string scheduler = std::string(DMOE_BUILD_DIR) + "/scheduler/dancemoe-scheduler";
  double duration_s = 20.0;
  std::vector<Phase> phases = {{"base", 64, 1.0}, {"10x", 64, 10.0}, {"640n", 640, 1.0}};
  uint64_t tokens = 256;
  int n_peers = 8;
  bool keep = false;
  std::string tmp;  // parent of the working directory (e.g. /dev/shm: no disk syncs)
};

struct SimNode {
  std::string id;
  zmq::socket_t socket;
  uint64_t sequence = 0;
  Clock::time_point next_report;
  Clock::time_point next_heartbeat;
  uint64_t window_idx = 0;
  bool registered = false;
  std::unordered_map<uint64_t, Clock::time_point> pending;  // report sequence -> sent
  std::vector<std::string> peers;
  std::mt19937 rng;
};

struct PhaseResult {
  uint64_t sent = 0;
  uint64_t acked = 0;
  uint64_t errors = 0;
  uint64_t lost = 0;  // no Ack by the end of the drain
  std::vector<double> latency_ms;
  double wall_s = 0.0;
  double cpu_s = 0.0;
  std::string first_error;
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class LoadGenerator {
 public:
  LoadGenerator(const Options& options, std::string endpoint, std::string model_id)
      : options_(options), endpoint_(std::move(endpoint)), model_id_(std::move(model_id)) {}

  Result<PhaseResult> run(const Phase& phase, pid_t daemon) {
    DMOE_RETURN_IF_ERROR(connect_nodes(phase));
    DMOE_RETURN_IF_ERROR(register_all());
    PhaseResult result;
    const auto period = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / phase.rate_per_s));
    const auto start = Clock::now() + std::chrono::milliseconds(100);
    // Staggered: node i first reports at start + i/n of a period.
    for (size_t i = 0; i < nodes_.size(); ++i) {
      nodes_[i].next_report =
          start + period * static_cast<int64_t>(i) / static_cast<int64_t>(nodes_.size());
      nodes_[i].next_heartbeat = nodes_[i].next_report + heartbeat_interval_ / 2;
    }
    const auto end = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(options_.duration_s));
    const int64_t period_ms = std::max<int64_t>(1, static_cast<int64_t>(1000.0 / phase.rate_per_s));
    const int64_t wall_base = wall_now_ms() - period_ms;
    const std::optional<double> cpu0 = bench::process_cpu_s(daemon);
    const auto t0 = Clock::now();
    while (true) {
      const auto now = Clock::now();
      if (now >= end) break;
      Clock::time_point next = end;
      for (SimNode& n : nodes_) {
        if (n.next_report <= now) {
          send_report(n, wall_base + static_cast<int64_t>(n.window_idx) * period_ms, period_ms,
                      &result);
          n.next_report += period;
        }
        if (n.next_heartbeat <= now) {
          send(n, proto::Heartbeat{0, 0});
          n.next_heartbeat += heartbeat_interval_;
        }
        next = std::min({next, n.next_report, n.next_heartbeat});
      }
      poll_until(next, &result);
    }
    result.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::optional<double> cpu1 = bench::process_cpu_s(daemon);
    result.cpu_s = cpu0 && cpu1 ? *cpu1 - *cpu0 : -1.0;
    // Drain: Acks of the last reports (not counted in the rates above).
    const auto drain_end = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < drain_end && outstanding() > 0) {
      poll_until(std::min(drain_end, Clock::now() + std::chrono::milliseconds(50)), &result);
    }
    result.lost = outstanding();
    nodes_.clear();  // closes the sockets (linger 0)
    return result;
  }

 private:
  Status connect_nodes(const Phase& phase) {
    nodes_.clear();
    nodes_.reserve(phase.n_nodes);
    for (int i = 0; i < phase.n_nodes; ++i) {
      SimNode n;
      char id[64];
      std::snprintf(id, sizeof id, "%s-node-%03d", phase.name.c_str(), i);
      n.id = id;
      DMOE_ASSIGN_OR_RETURN(n.socket, net::make_socket(context_, zmq::socket_type::dealer));
      DMOE_RETURN_IF_ERROR(net::connect(n.socket, endpoint_));
      n.rng.seed(static_cast<uint32_t>(1000 + i));
      for (int p = 1; p <= options_.n_peers && p < phase.n_nodes; ++p) {
        char peer[64];
        std::snprintf(peer, sizeof peer, "%s-node-%03d", phase.name.c_str(),
                      (i + p) % phase.n_nodes);
        n.peers.push_back(peer);
      }
      nodes_.push_back(std::move(n));
    }
    return Status::ok();
  }

  Status register_all() {
    for (SimNode& n : nodes_) {
      proto::Register reg;
      reg.node_id = n.id;
      reg.model_id = model_id_;
      reg.devices = {{"gpu0", 64 * uint64_t{3 * 16 * 8 * 2}, 5e9, "cuda"}};
      reg.host_memory_bytes = uint64_t{64} << 30;
      reg.expert_endpoint = "tcp://127.0.0.1:7000";
      reg.http_endpoint = "127.0.0.1:8000";
      send(n, reg);
    }
    PhaseResult ignored;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < deadline) {
      size_t done = 0;
      for (const SimNode& n : nodes_) done += n.registered;
      if (done == nodes_.size()) return Status::ok();
      if (!refusal_.empty()) return failed_precondition("registration refused: " + refusal_);
      poll_until(Clock::now() + std::chrono::milliseconds(50), &ignored);
    }
    return deadline_exceeded("not every node was registered within 30 s");
  }

  void send(SimNode& n, proto::Body body) {
    proto::Envelope env;
    env.cluster_id = "default";
    env.sender = n.id;
    env.sequence = ++n.sequence;
    env.body = std::move(body);
    (void)net::send_message(n.socket, env);
  }

  void send_report(SimNode& n, int64_t window_start_ms, int64_t window_ms, PhaseResult* result) {
    proto::ActivationReport r;
    r.window_start_ms = static_cast<uint64_t>(window_start_ms);
    r.window_end_ms = static_cast<uint64_t>(window_start_ms + window_ms);
    r.tokens = options_.tokens;
    r.requests = 4;
    r.counts = bench::window_counts(popularity_, options_.tokens, n.rng);
    bench::fill_call_stats(&r, n.peers, 0.6, n.rng);
    ++n.window_idx;
    const auto sent = Clock::now();
    send(n, std::move(r));
    n.pending[n.sequence] = sent;
    ++result->sent;
  }

  size_t outstanding() const {
    size_t total = 0;
    for (const SimNode& n : nodes_) total += n.pending.size();
    return total;
  }

  void poll_until(Clock::time_point until, PhaseResult* result) {
    poller_.clear();
    for (SimNode& n : nodes_) poller_.add(n.socket);
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    Result<bool> ready = poller_.wait(wait);
    if (!ready.is_ok() || !*ready) return;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!poller_.readable(i)) continue;
      SimNode& n = nodes_[i];
      while (auto message = net::receive_message(n.socket, std::chrono::milliseconds(0), false)) {
        on_message(n, *message, result);
      }
    }
  }

  void on_message(SimNode& n, const net::ReceivedMessage& message, PhaseResult* result) {
    const auto now = Clock::now();
    if (!message.envelope.is_ok()) {
      ++result->errors;
      return;
    }
    const proto::Body& body = message.envelope->body;
    if (const auto* ack = std::get_if<proto::Ack>(&body)) {
      const auto it = n.pending.find(ack->sequence);
      if (it == n.pending.end()) return;  // a heartbeat's Ack
      result->latency_ms.push_back(ms_between(it->second, now));
      n.pending.erase(it);
      ++result->acked;
    } else if (const auto* error = std::get_if<proto::Error>(&body)) {
      ++result->errors;
      if (result->first_error.empty()) result->first_error = error->message;
      n.pending.erase(error->in_reply_to);
    } else if (const auto* reply = std::get_if<proto::RegisterReply>(&body)) {
      if (!reply->accepted) refusal_ = reply->reason;
      n.registered = reply->accepted;
      heartbeat_interval_ = std::chrono::milliseconds(std::max<uint32_t>(
          100, reply->heartbeat_interval_ms == 0 ? 2000 : reply->heartbeat_interval_ms));
    } else if (const auto* prepare = std::get_if<proto::PlacementPrepare>(&body)) {
      send(n, proto::Ready{prepare->version});  // no round is expected; answer like a node
    }
  }

  const Options& options_;
  std::string endpoint_;
  std::string model_id_;
  zmq::context_t context_{1};
  std::vector<SimNode> nodes_;
  net::Poller poller_;
  std::vector<std::vector<double>> popularity_ = bench::expert_popularity(42);
  Clock::duration heartbeat_interval_ = std::chrono::seconds(2);
  std::string refusal_;
};

struct StoredRows {
  int64_t reports = 0;
  int64_t peer_rows = 0;
  int64_t count_entries = 0;
};

// Rows of one phase (node ids "<phase>-node-NNN") in the database file.
Result<StoredRows> stored_rows(const fs::path& db_path, const std::string& phase) {
  store::Database::Options o;
  o.read_only = true;
  o.create = false;
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<store::Database> db,
                        store::Database::open(db_path.string(), o));
  StoredRows rows;
  DMOE_ASSIGN_OR_RETURN(store::Statement s,
                        db->prepare("SELECT id, counts FROM reports WHERE node_id LIKE ?"));
  s.bind(1, phase + "-node-%");
  DMOE_ASSIGN_OR_RETURN(store::Statement peers,
                        db->prepare("SELECT count(*) FROM report_peers WHERE report_id IN "
                                    "(SELECT id FROM reports WHERE node_id LIKE ?)"));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    ++rows.reports;
    DMOE_ASSIGN_OR_RETURN(std::vector<store::CountEntry> entries,
                          store::decode_counts(s.column_blob_view(1)));
    rows.count_entries += static_cast<int64_t>(entries.size());
  }
  peers.bind(1, phase + "-node-%");
  DMOE_ASSIGN_OR_RETURN(const bool row, peers.step());
  if (row) rows.peer_rows = peers.column_int(0);
  return rows;
}

bool parse_phases(const std::string& text, std::vector<Phase>* phases) {
  phases->clear();
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t x = item.find('x');
    if (x == std::string::npos) return false;
    Phase p;
    p.n_nodes = std::stoi(item.substr(0, x));
    p.rate_per_s = std::stod(item.substr(x + 1));
    if (p.n_nodes <= 0 || p.rate_per_s <= 0) return false;
    p.name = "p" + std::to_string(phases->size() + 1) + "n" + std::to_string(p.n_nodes);
    phases->push_back(p);
  }
  return !phases->empty();
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--keep") {
      options.keep = true;
    } else if (arg == "--duration" && has_value) {
      options.duration_s = std::stod(argv[++i]);
    } else if (arg == "--tmp" && has_value) {
      options.tmp = argv[++i];
    } else if (arg == "--scheduler" && has_value) {
      options.scheduler = argv[++i];
    } else if (arg == "--tokens" && has_value) {
      options.tokens = std::stoull(argv[++i]);
    } else if (arg == "--peers" && has_value) {
      options.n_peers = std::stoi(argv[++i]);
    } else if (arg == "--phases" && has_value) {
      if (!parse_phases(argv[++i], &options.phases)) {
        std::fprintf(stderr, "--phases: expected NODESxRATE[,NODESxRATE...], e.g. 64x1,64x10\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown or incomplete argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (!fs::exists(options.scheduler)) {
    std::fprintf(stderr, "%s not found: build the dancemoe-scheduler target (or --scheduler)\n",
                 options.scheduler.c_str());
    return 2;
  }
  const fs::path dir = bench::make_temp_dir("bench-scheduler-ingest", options.tmp);
  auto model_id = bench::write_olmoe_shape_model(dir / "model");
  if (!model_id.is_ok()) {
    std::fprintf(stderr, "model: %s\n", model_id.status().to_string().c_str());
    return 1;
  }
  const fs::path db = dir / "scheduler.db";
  const fs::path ready = dir / "ready.json";
  std::unique_ptr<bench::Daemon> daemon = std::make_unique<bench::Daemon>(
      std::vector<std::string>{options.scheduler, "--model", (dir / "model").string(), "--db",
                               db.string(), "--control", "tcp://127.0.0.1:*", "--ready-file",
                               ready.string(), "--log-level", "warn", "--interval", "86400",
                               "--cold-start-settle", "86400", "--http", "127.0.0.1:0"},
      dir / "scheduler.log");
  if (!bench::wait_for_file(ready, std::chrono::seconds(30))) {
    std::fprintf(stderr, "the scheduler did not become ready; log: %s\n",
                 (dir / "scheduler.log").c_str());
    return 1;
  }
  std::string endpoint;
  {
    std::ifstream in(ready);
    endpoint = nlohmann::json::parse(in)["control"].get<std::string>();
  }
  std::printf("scheduler pid %d on %s, database %s\n", daemon->pid(), endpoint.c_str(), db.c_str());
  std::printf("model: %d MoE layers x %d experts (OLMoE shape), %llu tokens per window, %d peers\n",
              bench::kOlmoeLayers, bench::kOlmoeExperts,
              static_cast<unsigned long long>(options.tokens), options.n_peers);
  std::printf("%-6s %5s %6s | %9s %9s %9s %11s | %7s %7s %7s | %6s | %s\n", "phase", "nodes",
              "rate/s", "acked/s", "stored/s", "rows/s", "entries/s", "p50 ms", "p99 ms", "max ms",
              "cpu %", "errors/lost");
  LoadGenerator generator(options, endpoint, *model_id);
  bool all_ok = true;
  for (const Phase& phase : options.phases) {
    Result<PhaseResult> r = generator.run(phase, daemon->pid());
    if (!r.is_ok()) {
      std::fprintf(stderr, "phase %s: %s\n", phase.name.c_str(), r.status().to_string().c_str());
      all_ok = false;
      break;
    }
    Result<StoredRows> rows = stored_rows(db, phase.name);
    if (!rows.is_ok()) {
      std::fprintf(stderr, "counting rows: %s\n", rows.status().to_string().c_str());
      all_ok = false;
      break;
    }
    const double w = r->wall_s;
    std::printf(
        "%-6s %5d %6.1f | %9.1f %9.1f %9.1f %11.0f | %7.2f %7.2f %7.2f | %6.1f | %llu/%llu\n",
        phase.name.c_str(), phase.n_nodes, phase.rate_per_s, r->acked / w, rows->reports / w,
        (rows->reports + rows->peer_rows) / w, rows->count_entries / w,
        bench::quantile(r->latency_ms, 0.5), bench::quantile(r->latency_ms, 0.99),
        bench::quantile(r->latency_ms, 1.0), 100.0 * r->cpu_s / w,
        static_cast<unsigned long long>(r->errors), static_cast<unsigned long long>(r->lost));
    std::printf(
        "       sent %llu, acked %llu, stored %lld reports + %lld peer rows (%lld count "
        "entries) in %.1f s\n",
        static_cast<unsigned long long>(r->sent), static_cast<unsigned long long>(r->acked),
        static_cast<long long>(rows->reports), static_cast<long long>(rows->peer_rows),
        static_cast<long long>(rows->count_entries), w);
    if (!r->first_error.empty()) std::printf("       first error: %s\n", r->first_error.c_str());
    std::fflush(stdout);
  }
  const int exit_code = daemon->stop();
  std::error_code ec;
  std::printf("scheduler stopped (exit %d); database %.1f MB\n", exit_code,
              static_cast<double>(fs::file_size(db, ec)) / 1e6);
  if (!options.keep) fs::remove_all(dir, ec);
  return all_ok ? 0 : 1;
}
