// Placement round time (issue 4: statistics read + solve + gate for 16 nodes
// on an OLMoE shape, target < 200 ms), measured in-process on the real
// SchedulerService -- the daemon's own code path, minus the socket -- with
// a FakeClock and a real SQLite file filled through the service itself
// (Register, Heartbeats, ActivationReports, validated and stored as the
// daemon stores them).
//
// Cluster: 16 nodes, one device each, 96..160 expert slots (2x the model in
// total), load bandwidths 2..8 GB/s; OLMoE shape with OLMoE's real expert
// size (16 MoE layers x 64 experts x 12.6 MB). Every node has its own skewed
// expert popularity (per-node locality is what placement exploits); each
// node reports every 10 s with measured local and remote call latencies.
//
// Measured, each over --rounds rounds:
//   stats    the statistics read of a round alone (Store::counts_since +
//            totals_since of the window, as SchedulerService::gather_problem
//            when every node measured its latencies);
//   propose  `propose` query: statistics read + build problem + solve + gate
//            (+ the proposal's diff and JSON);
//   round    `round` query: the same plus recording the decision and, when
//            adopted, writing the new version and sending PlacementPrepare.
// In two situations:
//   cold     no placement yet, one hour of raw reports (the most the default
//            retention keeps raw: 5,760 reports) read as the window;
//   periodic a committed placement; between rounds 300 s of new reports
//            (the default period) with some nodes' popularity drifting, so
//            the gate both adopts and rejects. Adopted versions are
//            committed (every node answers Ready) before the next round.
//
//   build/release/tests/bench_scheduler_round [--rounds 10] [--policy optimal] [--tokens 2000]
//       [--keep]
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/runtime/clock.h"
#include "scheduler/daemon/service.h"
#include "tests/bench/scheduler_bench_support.h"

using namespace dancemoe;
using namespace dancemoe::scheduler;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr int kNodes = 16;
constexpr int64_t kWindowMs = 10'000;

double ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}

// CPU time of this process (single-threaded here), ms: on a shared machine
// wall time includes waiting for a core, CPU time does not.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Timing {
  double wall_ms = 0;
  double cpu_ms = 0;
};

class Cluster {
 public:
  Cluster(const std::string& db_path, const std::string& policy, uint64_t tokens)
      : model_(ModelInfo::synthetic("olmoe-shape", bench::kOlmoeLayers, bench::kOlmoeExperts,
                                    bench::kOlmoeTopK, bench::kOlmoeExpertBytes)),
        tokens_(tokens) {
    options_.planner.policy = policy;
    // Rounds are forced by the benchmark; timed work (expiry, retention)
    // still runs on tick().
    options_.interval_ms = int64_t{1} << 40;
    options_.cold_start_settle_ms = int64_t{1} << 40;
    auto store = store::Store::open(db_path);
    if (!store.is_ok()) {
      std::fprintf(stderr, "%s\n", store.status().to_string().c_str());
      std::exit(1);
    }
    store_ = std::move(*store);
    service_ = std::make_unique<SchedulerService>(options_, model_, store_.get(), &clock_);
    if (!service_->start().is_ok()) std::exit(1);
    for (int i = 0; i < kNodes; ++i) {
      char id[32];
      std::snprintf(id, sizeof id, "node-%02d", i);
      nodes_.push_back(id);
      popularity_.push_back(bench::expert_popularity(100 + i));
      rngs_.emplace_back(7 + i);
    }
    for (int i = 0; i < kNodes; ++i) {
      proto::Register reg;
      reg.node_id = nodes_[i];
      reg.model_id = model_.model_id;
      const uint64_t slots = 96 + 16 * static_cast<uint64_t>(i % 5);
      reg.devices = {{"gpu0", slots * bench::kOlmoeExpertBytes, 2e9 + 1.5e9 * (i % 5), "cuda"}};
      reg.host_memory_bytes = uint64_t{64} << 30;
      reg.expert_endpoint = "tcp://" + nodes_[i] + ":5551";
      send(nodes_[i], reg);
    }
  }

  // Reports of every node for `duration_ms` (one per 10 s window), with
  // heartbeats every 2 s, the clock advancing and the service ticking.
  void feed(int64_t duration_ms) {
    for (int64_t t = 0; t < duration_ms; t += 2'000) {
      clock_.advance_ms(2'000);
      for (int i = 0; i < kNodes; ++i) {
        send(nodes_[i], proto::Heartbeat{service_->committed_version(), 0});
        if ((clock_.wall_ms() / 2'000) % 5 == i % 5) send_report(i);
      }
      service_->tick();
      answer_prepares(service_->take_outbox());
    }
  }

  // A new popularity for every other node (their traffic changed).
  void drift(int epoch) {
    for (int i = epoch % 2; i < kNodes; i += 2) {
      popularity_[i] = bench::expert_popularity(1000 * epoch + i);
    }
  }

  Result<nlohmann::json> query(const std::string& what, Timing* timing) {
    const double c0 = cpu_ms();
    const auto t0 = SteadyClock::now();
    auto out = send("cli", proto::StatusRequest{what, "{}"});
    timing->wall_ms = ms_since(t0);
    timing->cpu_ms = cpu_ms() - c0;
    Result<nlohmann::json> answer = internal_error("no answer to " + what);
    for (const Outgoing& o : out) {
      if (const auto* reply = std::get_if<proto::StatusReply>(&o.envelope.body)) {
        answer = nlohmann::json::parse(reply->json);
      } else if (const auto* error = std::get_if<proto::Error>(&o.envelope.body)) {
        answer = Status(error->code, error->message);
      }
    }
    answer_prepares(out);
    return answer;
  }

  // The statistics read of a round, alone: since the committed placement
  // (all history before one).
  Timing time_statistics_read() {
    const double c0 = cpu_ms();
    const auto t0 = SteadyClock::now();
    const int64_t from = committed_ms_;
    auto counts = store_->counts_since(from, model_.index);
    auto window = store_->totals_since(from);
    // As gather_problem: history is read only when a node's window lacks a
    // latency measurement (never here: every node measures both), and
    // before any placement the window is all history.
    auto history = window;
    const Timing elapsed{ms_since(t0), cpu_ms() - c0};
    if (!counts.is_ok() || !window.is_ok() || !history.is_ok()) std::exit(1);
    return elapsed;
  }

  uint64_t committed_version() const { return service_->committed_version(); }
  int64_t report_rows() {
    return store_->db().query_int("SELECT count(*) FROM reports")->value_or(0);
  }

 private:
  std::vector<Outgoing> send(const std::string& sender, proto::Body body) {
    proto::Envelope env;
    env.cluster_id = options_.cluster_id;
    env.sender = sender;
    env.sequence = ++sequence_;
    env.body = std::move(body);
    net::ReceivedMessage message;
    message.routing_id = "r-" + sender;
    message.envelope = std::move(env);
    service_->handle(message);
    return service_->take_outbox();
  }

  void send_report(int i) {
    proto::ActivationReport r;
    r.window_end_ms = static_cast<uint64_t>(clock_.wall_ms());
    r.window_start_ms = r.window_end_ms - kWindowMs;
    r.tokens = tokens_;
    r.requests = 8;
    r.counts = bench::window_counts(popularity_[i], tokens_, rngs_[i]);
    std::vector<std::string> peers;
    for (int p = 0; p < kNodes; ++p) {
      if (p != i) peers.push_back(nodes_[p]);
    }
    bench::fill_call_stats(&r, peers, 0.5, rngs_[i]);
    r.placement_version = service_->committed_version();
    send(nodes_[i], std::move(r));
  }

  void answer_prepares(const std::vector<Outgoing>& out) {
    for (const Outgoing& o : out) {
      if (const auto* prepare = std::get_if<proto::PlacementPrepare>(&o.envelope.body)) {
        auto replies = send(o.routing_id.substr(2), proto::Ready{prepare->version});
        for (const Outgoing& reply : replies) {
          if (std::holds_alternative<proto::Commit>(reply.envelope.body)) {
            committed_ms_ = clock_.wall_ms();
          }
        }
        answer_prepares(replies);
      }
    }
  }

  ModelInfo model_;
  uint64_t tokens_;
  ServiceOptions options_;
  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<SchedulerService> service_;
  std::vector<std::string> nodes_;
  std::vector<std::vector<std::vector<double>>> popularity_;
  std::vector<std::mt19937> rngs_;
  uint64_t sequence_ = 0;
  int64_t committed_ms_ = 0;
};

struct Series {
  std::vector<double> wall, cpu;
  void add(const Timing& t) {
    wall.push_back(t.wall_ms);
    cpu.push_back(t.cpu_ms);
  }
  void clear() { wall.clear(), cpu.clear(); }
};

void print_row(const char* what, const Series& s) {
  std::printf(
      "  %-8s wall median %7.1f ms max %7.1f ms | cpu median %7.1f ms max %7.1f ms (n=%zu)\n", what,
      bench::quantile(s.wall, 0.5), bench::quantile(s.wall, 1.0), bench::quantile(s.cpu, 0.5),
      bench::quantile(s.cpu, 1.0), s.wall.size());
}

void print_solve(const std::vector<double>& solve) {
  std::printf("  %-8s      median %7.1f ms max %7.1f ms (the policy alone, from the proposal)\n",
              "solve", bench::quantile(solve, 0.5), bench::quantile(solve, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 10;
  std::string policy = "optimal";
  uint64_t tokens = 2000;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--keep")) keep = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--policy")) policy = argv[i + 1];
    if (!std::strcmp(argv[i], "--tokens")) tokens = std::stoull(argv[i + 1]);
  }
  spdlog::set_level(spdlog::level::warn);
  const std::filesystem::path dir = bench::make_temp_dir("bench-scheduler-round");
  Cluster cluster((dir / "scheduler.db").string(), policy, tokens);

  const auto t_fill = SteadyClock::now();
  cluster.feed(3600 * 1000);
  std::printf(
      "16 nodes, OLMoE shape (16 x 64 experts, %.1f MB each), policy %s; one hour of "
      "10-s reports stored through the service: %lld reports in %.1f s\n",
      bench::kOlmoeExpertBytes / 1e6, policy.c_str(), static_cast<long long>(cluster.report_rows()),
      ms_since(t_fill) / 1000.0);

  Series stats, propose, round;
  std::vector<double> solve;
  for (int r = 0; r < rounds; ++r) {
    stats.add(cluster.time_statistics_read());
    Timing t;
    auto p = cluster.query("propose", &t);
    if (!p.is_ok()) {
      std::fprintf(stderr, "propose: %s\n", p.status().to_string().c_str());
      return 1;
    }
    propose.add(t);
    solve.push_back((*p)["solve_ms"].get<double>());
  }
  std::printf("cold (no placement yet, the window is the whole hour: %lld reports):\n",
              static_cast<long long>(cluster.report_rows()));
  print_row("stats", stats);
  print_solve(solve);
  print_row("propose", propose);

  Timing first_t;
  auto first = cluster.query("round", &first_t);
  if (!first.is_ok() || (*first)["outcome"] != "adopted" || cluster.committed_version() == 0) {
    std::fprintf(stderr, "the first round did not adopt and commit a placement: %s\n",
                 first.is_ok() ? first->dump().c_str() : first.status().to_string().c_str());
    return 1;
  }
  std::printf(
      "  first round (cold start, adopted, version %llu committed): wall %.1f ms, cpu %.1f ms\n",
      static_cast<unsigned long long>(cluster.committed_version()), first_t.wall_ms,
      first_t.cpu_ms);

  stats.clear(), propose.clear(), round.clear(), solve.clear();
  int adopted = 0, rejected = 0;
  for (int r = 0; r < rounds; ++r) {
    // Traffic changes before every other round; in between it does not, and
    // the gate has nothing to gain.
    if (r % 2 == 0) cluster.drift(r + 1);
    cluster.feed(300 * 1000);
    stats.add(cluster.time_statistics_read());
    Timing t;
    auto p = cluster.query("propose", &t);
    if (!p.is_ok()) {
      std::fprintf(stderr, "propose: %s\n", p.status().to_string().c_str());
      return 1;
    }
    propose.add(t);
    solve.push_back((*p)["solve_ms"].get<double>());
    auto d = cluster.query("round", &t);
    if (!d.is_ok()) {
      std::fprintf(stderr, "round: %s\n", d.status().to_string().c_str());
      return 1;
    }
    round.add(t);
    const std::string outcome = (*d)["outcome"].get<std::string>();
    adopted += outcome == "adopted";
    rejected += outcome == "rejected";
    std::printf(
        "  round %2d: %-8s C(P)=%.1f s C(P')=%.1f s T_mig=%.3f s  wall %.1f ms cpu %.1f ms\n",
        r + 1, outcome.c_str(), (*d)["cost_current_s"].get<double>(),
        (*d)["cost_new_s"].get<double>(), (*d)["migration_s"].get<double>(), t.wall_ms, t.cpu_ms);
  }
  std::printf("periodic (300 s of reports since the last round, %d adopted, %d rejected):\n",
              adopted, rejected);
  print_row("stats", stats);
  print_solve(solve);
  print_row("propose", propose);
  print_row("round", round);
  std::error_code ec;
  if (keep) {
    std::printf("database kept: %s\n", (dir / "scheduler.db").c_str());
  } else {
    std::filesystem::remove_all(dir, ec);
  }
  return 0;
}
