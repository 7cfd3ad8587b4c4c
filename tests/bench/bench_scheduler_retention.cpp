// Scheduler database size under retention (issue 4: a week of reports from
// 16 nodes on an OLMoE-shaped model must stay under 200 MB).
//
// Drives the real Store and Retention (scheduler/store) with a simulated
// clock: 16 nodes each store one report per 10-s window (OLMoE shape: 16 MoE
// layers x 64 experts, --tokens tokens per window so nearly all 1,024 counts
// are non-zero; call statistics for 15 peers), for --days days. Retention
// runs as the daemon runs it: the default RetentionPolicy (1 h raw, 1-h
// roll-up buckets kept 30 days), a pass every 60 s of simulated time, at
// most 8 batches per pass (SchedulerService::run_retention). Prints, per
// simulated day and at the end: the database size (file + WAL + shared
// memory, Store::file_bytes), page and free-list counts, and the rows of
// each table; at the end the CPU time of the retention passes and the
// statistics read of a round (counts_since + totals_since) whose window is
// the whole retained week (the worst case) or the last 300 s (a periodic
// round).
//
//   build/release/tests/bench_scheduler_retention [--days 7] [--nodes 16] [--tokens 2000]
//       [--db PATH]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "scheduler/store/retention.h"
#include "scheduler/store/store.h"
#include "tests/bench/scheduler_bench_support.h"

using namespace dancemoe;
using namespace dancemoe::store;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr int64_t kWindowMs = 10'000;
constexpr int64_t kRetentionCheckMs = 60'000;  // ServiceOptions::retention_check_ms default
constexpr int kBatchesPerPass = 8;             // SchedulerService::run_retention

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

int64_t rows(Store& s, const char* table) {
  auto n = s.db().query_int(std::string("SELECT count(*) FROM ") + table);
  return n.is_ok() ? n->value_or(0) : -1;
}

void print_state(Store& s, const char* label) {
  const int64_t pages = s.db().query_int("PRAGMA page_count")->value_or(0);
  const int64_t page_size = s.db().query_int("PRAGMA page_size")->value_or(0);
  const int64_t free_pages = s.db().query_int("PRAGMA freelist_count")->value_or(0);
  std::printf(
      "%-9s %8.1f MB (pages %.1f MB, free %.1f MB) | reports %7lld report_peers %8lld "
      "rollups %6lld rollup_peers %7lld watermarks %lld\n",
      label, static_cast<double>(s.file_bytes()) / 1e6,
      static_cast<double>(pages * page_size) / 1e6,
      static_cast<double>(free_pages * page_size) / 1e6, static_cast<long long>(rows(s, "reports")),
      static_cast<long long>(rows(s, "report_peers")), static_cast<long long>(rows(s, "rollups")),
      static_cast<long long>(rows(s, "rollup_peers")),
      static_cast<long long>(rows(s, "watermarks")));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  double days = 7.0;
  int n_nodes = 16;
  uint64_t tokens = 2000;
  std::string db_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--days")) days = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--nodes")) n_nodes = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--tokens")) tokens = std::stoull(argv[i + 1]);
    if (!std::strcmp(argv[i], "--db")) db_path = argv[i + 1];
  }
  const std::filesystem::path dir = bench::make_temp_dir("bench-scheduler-retention");
  if (db_path.empty()) db_path = (dir / "scheduler.db").string();
  auto opened = Store::open(db_path);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "%s\n", opened.status().to_string().c_str());
    return 1;
  }
  Store& store = **opened;
  const RetentionPolicy policy;  // the defaults, as the daemon uses them
  std::printf(
      "%d nodes, OLMoE shape (%d x %d experts), %llu tokens per 10-s window, %.1f days; "
      "retention: raw %lld s, buckets %lld s kept %lld days\n",
      n_nodes, bench::kOlmoeLayers, bench::kOlmoeExperts, static_cast<unsigned long long>(tokens),
      days, static_cast<long long>(policy.raw_retention_ms / 1000),
      static_cast<long long>(policy.bucket_ms / 1000),
      static_cast<long long>(policy.rollup_retention_ms / 86'400'000));

  std::vector<std::string> nodes;
  std::vector<std::vector<std::vector<double>>> popularity;
  std::vector<std::mt19937> rngs;
  for (int i = 0; i < n_nodes; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "node-%02d", i);
    nodes.push_back(id);
    popularity.push_back(bench::expert_popularity(100 + i));
    rngs.emplace_back(7 + i);
  }
  std::vector<uint64_t> sequence(n_nodes, 0);
  const int64_t t0 = 1'700'000'000'000;
  const int64_t end = t0 + static_cast<int64_t>(days * 86'400'000.0);
  int64_t next_retention = t0;
  int64_t next_print = t0 + 86'400'000;
  int64_t n_stored = 0, n_rolled = 0, n_passes = 0;
  double insert_s = 0, retention_s = 0, max_pass_ms = 0;
  std::vector<double> pass_cpu_ms;  // passes that rolled something up
  const auto wall0 = SteadyClock::now();
  for (int64_t now = t0 + kWindowMs; now <= end; now += kWindowMs) {
    const auto a = SteadyClock::now();
    for (int i = 0; i < n_nodes; ++i) {
      ReportRecord r;
      r.node_id = nodes[i];
      r.sequence = ++sequence[i];
      r.window_start_ms = now - kWindowMs;
      r.window_end_ms = now;
      r.received_ms = now;
      r.tokens = tokens;
      r.requests = 8;
      proto::ActivationReport wire;
      wire.counts = bench::window_counts(popularity[i], tokens, rngs[i]);
      std::vector<std::string> peers;
      for (int p = 0; p < n_nodes; ++p) {
        if (p != i) peers.push_back(nodes[p]);
      }
      bench::fill_call_stats(&wire, peers, 0.5, rngs[i]);
      for (const proto::ExpertCount& c : wire.counts) {
        r.counts.push_back(
            {static_cast<uint16_t>(c.layer), static_cast<uint16_t>(c.expert), c.count});
        r.activations += c.count;
      }
      r.local_hits = wire.local_hits;
      r.local_calls = wire.local_calls;
      r.local_mean_us = wire.local_mean_latency_us;
      r.local_p99_us = wire.local_p99_latency_us;
      r.peers = wire.remote;
      auto stored = store.insert_report(r);
      if (!stored.is_ok() || *stored != InsertOutcome::kStored) {
        std::fprintf(stderr, "insert: %s\n",
                     stored.is_ok() ? "not stored" : stored.status().to_string().c_str());
        return 1;
      }
      ++n_stored;
    }
    insert_s += std::chrono::duration<double>(SteadyClock::now() - a).count();
    if (now >= next_retention) {
      next_retention = now + kRetentionCheckMs;
      const auto b = SteadyClock::now();
      const double cpu0 = cpu_ms();
      const int64_t rolled_before = n_rolled;
      for (int batch = 0; batch < kBatchesPerPass; ++batch) {
        auto stats = Retention::apply(store, policy, now);
        if (!stats.is_ok()) {
          std::fprintf(stderr, "retention: %s\n", stats.status().to_string().c_str());
          return 1;
        }
        n_rolled += stats->reports_rolled_up;
        if (!stats->more) break;
      }
      const double pass_ms =
          std::chrono::duration<double, std::milli>(SteadyClock::now() - b).count();
      if (n_rolled > rolled_before) pass_cpu_ms.push_back(cpu_ms() - cpu0);
      retention_s += pass_ms / 1000.0;
      max_pass_ms = std::max(max_pass_ms, pass_ms);
      ++n_passes;
    }
    if (now >= next_print) {
      next_print += 86'400'000;
      char label[32];
      std::snprintf(label, sizeof label, "day %lld",
                    static_cast<long long>((now - t0) / 86'400'000));
      print_state(store, label);
    }
  }
  print_state(store, "end");
  std::printf(
      "stored %lld reports, rolled up %lld, %lld retention passes (max %.1f ms); "
      "%.1f s inserting, %.1f s in retention, %.1f s in all\n",
      static_cast<long long>(n_stored), static_cast<long long>(n_rolled),
      static_cast<long long>(n_passes), max_pass_ms, insert_s, retention_s,
      std::chrono::duration<double>(SteadyClock::now() - wall0).count());
  std::printf(
      "retention pass CPU (passes that rolled up): median %.1f ms, p99 %.1f ms, max %.1f ms\n",
      bench::quantile(pass_cpu_ms, 0.5), bench::quantile(pass_cpu_ms, 0.99),
      bench::quantile(pass_cpu_ms, 1.0));

  // The worst statistics read of a round: a window over everything retained.
  CountIndex index;
  for (int l = 0; l < bench::kOlmoeLayers; ++l) {
    index.layer_offset.push_back(l * bench::kOlmoeExperts);
    index.layer_experts.push_back(bench::kOlmoeExperts);
  }
  index.n_total = bench::kOlmoeLayers * bench::kOlmoeExperts;
  // And the usual one: a periodic round's window of the last 300 s.
  for (const int64_t since : {int64_t{0}, end - 300'000}) {
    const double cpu0 = cpu_ms();
    const auto c = SteadyClock::now();
    auto counts = store.counts_since(since, index);
    auto totals = store.totals_since(since);
    if (!counts.is_ok() || !totals.is_ok()) return 1;
    std::printf("statistics read, window %s: wall %.1f ms, cpu %.1f ms\n",
                since == 0 ? "= everything retained" : "= the last 300 s",
                std::chrono::duration<double, std::milli>(SteadyClock::now() - c).count(),
                cpu_ms() - cpu0);
  }
  const uint64_t bytes = store.file_bytes();
  std::printf("final database size %.1f MB: %s the 200 MB budget\n", bytes / 1e6,
              bytes < 200'000'000 ? "under" : "OVER");
  opened->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return bytes < 200'000'000 ? 0 : 1;
}
