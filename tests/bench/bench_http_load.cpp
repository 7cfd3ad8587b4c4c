// HTTP load test of one node (issue 6): N concurrent clients (16) send
// streamed /v1/completions requests back to back for a duration (60 s) to
// one standalone node holding every expert of a synthetic model, on
// loopback. Prints time to first token (p50, p99: queueing included -- the
// engine runs one sequence at a time, so with 16 clients a request waits for
// ~15 others), generated tokens/s, errors, and the node's RSS after warm-up
// vs at the end (target: flat within 10 %).
//
//   build/release/tests/bench_http_load [--preset small] [--duration 60] [--clients 16]
//       [--max-tokens 32] [--threads 0] [--model DIR]
//
// Exit code 0 only with no error and RSS flat within 10 %.
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/model/synthetic/synthetic_model.h"
#include "tests/bench/bench_models.h"
#include "tests/bench/streamed_completion.h"

extern char** environ;

using namespace dancemoe;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

using bench::quantile;
using bench::rss_kib;
using Outcome = bench::StreamOutcome;

Outcome one_request(const std::string& host, int port, int max_tokens, uint64_t seed) {
  return bench::streamed_completion(
      host, port, "The cluster of workstations serves a mixture of experts", max_tokens, seed);
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "small";
  fs::path model_dir;
  double duration_s = 60;
  int n_clients = 16;
  int max_tokens = 32;
  int threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--preset") preset = argv[i + 1];
    if (flag == "--model") model_dir = argv[i + 1];
    if (flag == "--duration") duration_s = std::stod(argv[i + 1]);
    if (flag == "--clients") n_clients = std::stoi(argv[i + 1]);
    if (flag == "--max-tokens") max_tokens = std::stoi(argv[i + 1]);
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
  }
  const fs::path work = fs::path(DMOE_BUILD_DIR) / "bench-http-load";
  fs::create_directories(work);
  if (model_dir.empty()) model_dir = fs::path(DMOE_BUILD_DIR) / "bench-models" / preset;
  if (!bench::ensure_preset(preset, model_dir)) return 1;
  // Every expert on the one node.
  const json config = json::parse(std::ifstream(model_dir / "config.json"));
  const int64_t n_layers = config["num_hidden_layers"].get<int64_t>();
  const int64_t n_experts = config["num_experts"].get<int64_t>();
  std::vector<int64_t> dense;
  if (config.contains("mlp_only_layers"))
    dense = config["mlp_only_layers"].get<std::vector<int64_t>>();
  json experts = json::array();
  for (int64_t l = 0; l < n_layers; ++l) {
    if (std::find(dense.begin(), dense.end(), l) != dense.end()) continue;
    for (int64_t e = 0; e < n_experts; ++e) experts.push_back({l, e});
  }
  const fs::path placement = work / "placement.json";
  std::ofstream(placement) << json{{"version", 1},
                                   {"nodes",
                                    {{"load",
                                      {{"expert_endpoint", "tcp://127.0.0.1:0"},
                                       {"devices", {{"cpu", experts}}}}}}}}
                                  .dump();
  const fs::path ready = work / "ready.json";
  fs::remove(ready);
  const std::string log = (work / "node.log").string();
  std::vector<std::string> args = {DMOE_NODE_PATH, "--model", model_dir.string(), "--node-id",
                                   "load", "--placement", placement.string(), "--experts",
                                   "tcp://127.0.0.1:0", "--http", "127.0.0.1:0", "--ready-file",
                                   ready.string(), "--threads", std::to_string(threads),
                                   "--log-level", "warn", "--max-queued", std::to_string(n_clients),
                                   // One node, no peers: HTTP is what is measured.
                                   "--insecure", "--expert-memory", "4G"};
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  if (posix_spawn(&pid, cargs[0], &actions, nullptr, cargs.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", DMOE_NODE_PATH);
    return 1;
  }
  posix_spawn_file_actions_destroy(&actions);
  struct Stop {
    pid_t pid;
    ~Stop() {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  } stop{pid};
  for (int i = 0; i < 600 && !(fs::exists(ready) && fs::file_size(ready) > 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!fs::exists(ready)) {
    std::fprintf(stderr, "node not ready; see %s\n", log.c_str());
    return 1;
  }
  const std::string http = json::parse(std::ifstream(ready))["http"].get<std::string>();
  const std::string host = http.substr(0, http.rfind(':'));
  const int port = std::stoi(http.substr(http.rfind(':') + 1));
  const long rss_loaded = rss_kib(pid);

  // Warm-up: allocations that happen once (KV cache pages, thread pools, first connections).
  for (int i = 0; i < 3; ++i) one_request(host, port, max_tokens, 1000 + i);
  {
    std::vector<std::thread> warm;
    for (int c = 0; c < n_clients; ++c) {
      warm.emplace_back([&, c] { one_request(host, port, max_tokens, 2000 + c); });
    }
    for (auto& t : warm) t.join();
  }
  const long rss_start = rss_kib(pid);
  std::printf("node %s (pid %d), model %s, %d clients, %d tokens per request, %.0f s\n",
              http.c_str(), pid, model_dir.filename().c_str(), n_clients, max_tokens, duration_s);

  std::mutex mutex;
  std::vector<double> ttft;
  std::vector<std::string> errors;
  int64_t tokens = 0;
  int64_t n_ok = 0;
  long rss_peak = rss_start;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  std::atomic<bool> running{true};
  std::thread sampler([&] {
    while (running) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::lock_guard<std::mutex> lock(mutex);
      rss_peak = std::max(rss_peak, rss_kib(pid));
    }
  });
  std::vector<std::thread> clients;
  for (int c = 0; c < n_clients; ++c) {
    clients.emplace_back([&, c] {
      uint64_t seed = static_cast<uint64_t>(c) * 1000003u;
      while (Clock::now() < deadline) {
        const Outcome o = one_request(host, port, max_tokens, ++seed);
        std::lock_guard<std::mutex> lock(mutex);
        if (o.ok) {
          ++n_ok;
          tokens += o.tokens;
          ttft.push_back(o.ttft_s);
        } else {
          errors.push_back(o.error);
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  running = false;
  sampler.join();
  const long rss_end = rss_kib(pid);

  const double growth = rss_start > 0 ? static_cast<double>(rss_end - rss_start) / rss_start : 0;
  std::printf("requests ok %lld, errors %zu, elapsed %.1f s\n", static_cast<long long>(n_ok),
              errors.size(), elapsed);
  for (size_t i = 0; i < std::min<size_t>(errors.size(), 5); ++i) {
    std::printf("  error: %s\n", errors[i].c_str());
  }
  std::printf("time to first token: p50 %.1f ms, p99 %.1f ms (queueing included)\n",
              quantile(ttft, 0.5) * 1e3, quantile(ttft, 0.99) * 1e3);
  std::printf("generated tokens/s: %.1f (all clients together)\n",
              static_cast<double>(tokens) / elapsed);
  std::printf(
      "node RSS: loaded %.1f MiB, after warm-up %.1f MiB, peak %.1f MiB, end %.1f MiB "
      "(end vs after warm-up %+.1f %%: %s)\n",
      rss_loaded / 1024.0, rss_start / 1024.0, rss_peak / 1024.0, rss_end / 1024.0, growth * 100,
      std::abs(growth) <= 0.10 ? "flat within 10 %" : "NOT flat");
  return errors.empty() && std::abs(growth) <= 0.10 ? 0 : 2;
}
