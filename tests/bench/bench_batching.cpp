// Continuous batching and the prefix cache (issue 16), on one standalone
// node holding every expert of a synthetic model, over HTTP on loopback.
//
// Part 1, interleaved rounds of: one client alone (requests back to back),
// then N clients (16) at once. Prints, over all rounds: generated tokens/s
// and time to first token (p50) of each, their ratios (targets: aggregate
// >= 4x one stream's, TTFT p50 <= 3x a lone request's), errors, and the
// node's RSS after warm-up vs at the end of the concurrent phases, less the
// prefix cache's bytes (it fills to its budget by design; target: the rest
// flat within 10 %).
// Part 2, interleaved: a chat's second turn (its long history repeated)
// on a node with the prefix cache and on one without (--prefix-cache 0).
// Prints each TTFT p50 and the ratio (target <= 0.3x).
//
//   build/release/tests/bench_batching [--preset small] [--rounds 3] [--lone 8]
//       [--concurrent 20] [--clients 16] [--max-tokens 32] [--turns 5]
//       [--history 900] [--threads 0] [--prefix-cache SIZE (part 1's node)]
//       [--layout rows (the nodes' --rows-layout: the A/B of kernels/interleave.h)]
//       [--stream-interval N (part 1's node; its A/B: run once per value)]
//       [--arrivals lockstep|random] [--think-ms 20]
//
// --arrivals random: the clients stop moving in lockstep -- each request asks
// for a length drawn uniformly from [max/2, 3 max/2] tokens (mean: max),
// its prompt gets 0-24 extra words, and a client pauses an exponentially
// distributed think time (mean --think-ms) before each request. Prompts then
// arrive while other streams decode, as a lab's users send them, which is
// what running prompts between a step's layers is for. The lone stream draws
// from the same distributions. Default: lockstep (every request max tokens,
// back to back: the targets are stated for it).
// --lone and --concurrent are seconds per round. Before each phase the
// memory's streaming-read rate is probed (a quarter second): on a shared VM
// it can change by 2x from one minute to the next, and a model whose lone
// stream is memory-bound and whose wide step is not (the medium preset) then
// gives a ratio that follows the memory, not the node. Printed per phase
// kind, with a warning when the probes differ by more than 25 %. Exit code 0
// only with no error.
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/model/synthetic/synthetic_model.h"
#include "kernels/cpu/memory_bandwidth.h"
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

Outcome complete(int port, const std::string& prompt, int max_tokens, uint64_t seed) {
  return bench::streamed_completion("127.0.0.1", port, prompt, max_tokens, seed);
}

// A node process serving every expert of the model; stopped on destruction.
struct Node {
  pid_t pid = -1;
  int port = 0;
  ~Node() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
};

bool start_node(const fs::path& model_dir, const fs::path& work, const std::string& name,
                const std::vector<std::string>& extra, int threads, Node* node) {
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
  const fs::path placement = work / (name + "-placement.json");
  std::ofstream(placement) << json{{"version", 1},
                                   {"nodes",
                                    {{name,
                                      {{"expert_endpoint", "tcp://127.0.0.1:0"},
                                       {"devices", {{"cpu", experts}}}}}}}}
                                  .dump();
  const fs::path ready = work / (name + "-ready.json");
  fs::remove(ready);
  const std::string log = (work / (name + ".log")).string();
  std::vector<std::string> args = {DMOE_NODE_PATH,
                                   "--model",
                                   model_dir.string(),
                                   "--node-id",
                                   name,
                                   "--placement",
                                   placement.string(),
                                   "--experts",
                                   "tcp://127.0.0.1:0",
                                   "--http",
                                   "127.0.0.1:0",
                                   "--ready-file",
                                   ready.string(),
                                   "--threads",
                                   std::to_string(threads),
                                   "--log-level",
                                   "warn",
                                   "--max-queued",
                                   "64",
                                   "--insecure",
                                   "--expert-memory",
                                   "4G"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int spawned = posix_spawn(&node->pid, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    node->pid = -1;
    std::fprintf(stderr, "cannot start %s\n", DMOE_NODE_PATH);
    return false;
  }
  for (int i = 0; i < 1200 && !(fs::exists(ready) && fs::file_size(ready) > 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!fs::exists(ready)) {
    std::fprintf(stderr, "node %s not ready; see %s\n", name.c_str(), log.c_str());
    return false;
  }
  const std::string http = json::parse(std::ifstream(ready))["http"].get<std::string>();
  node->port = std::stoi(http.substr(http.rfind(':') + 1));
  return true;
}

// A gauge of the node's /metrics (0 when absent).
double metric(int port, const std::string& name) {
  httplib::Client client("127.0.0.1", port);
  const auto res = client.Get("/metrics");
  if (!res || res->status != 200) return 0;
  const size_t at = res->body.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::stod(res->body.substr(at + name.size() + 2));
}

struct Phase {
  std::vector<double> ttft;
  int64_t tokens = 0;
  double seconds = 0;
  std::vector<std::string> errors;
  double steps = 0;               // the node's batched steps during the phase
  double step_sequences = 0;      // and the sequences they ran (/ steps: mean width)
  double interjections = 0;       // of those steps, prompts run inside another
  double step_tokens = 0;         // tokens those steps ran (decode and prompt)
  double prompt_saved = 0;        // prompt tokens the prefix cache saved
  std::vector<double> probe_gbs;  // streaming-read rate before each run
};

// The memory's streaming-read rate now, GB/s (the node idle between phases).
double probe_gbs(int threads) {
  return kernels::measure_read_bandwidth_bytes_per_s(int64_t{256} << 20, threads, 0.25) / 1e9;
}

// How requests are drawn (--arrivals, --think-ms).
struct Arrivals {
  bool random = false;
  double think_ms = 20;
};

// `clients` clients sending requests for `seconds`: back to back with
// max_tokens each, or drawn as `arrivals` says.
void run_phase(int port, int clients, double seconds, int max_tokens, uint64_t seed0,
               int probe_threads, const Arrivals& arrivals, Phase* phase) {
  phase->probe_gbs.push_back(probe_gbs(probe_threads));
  std::mutex mutex;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  const double steps0 = metric(port, "dancemoe_node_batch_steps_total");
  const double sequences0 = metric(port, "dancemoe_node_batch_step_sequences_total");
  const double interjections0 = metric(port, "dancemoe_node_batch_interjections_total");
  const double step_tokens0 = metric(port, "dancemoe_node_batch_step_tokens_total");
  const double saved0 = metric(port, "dancemoe_node_prefix_cache_saved_tokens_total");
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      uint64_t seed = seed0 + static_cast<uint64_t>(c) * 1000003u;
      std::mt19937_64 rng(seed);
      std::uniform_int_distribution<int> length(std::max(1, max_tokens / 2), max_tokens * 3 / 2);
      std::uniform_int_distribution<int> extra_words(0, 24);
      std::exponential_distribution<double> think(1.0 / std::max(arrivals.think_ms, 1e-3));
      while (Clock::now() < deadline) {
        std::string prompt = "The cluster of workstations serves a mixture of experts";
        int tokens = max_tokens;
        if (arrivals.random) {
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(think(rng)));
          if (Clock::now() >= deadline) break;
          tokens = length(rng);
          for (int w = extra_words(rng); w > 0; --w) prompt += w % 3 == 0 ? " and" : " experts";
        }
        const Outcome o = complete(port, prompt, tokens, ++seed);
        std::lock_guard<std::mutex> lock(mutex);
        if (o.ok) {
          phase->tokens += o.tokens;
          phase->ttft.push_back(o.ttft_s);
        } else {
          phase->errors.push_back(o.error);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  phase->seconds += std::chrono::duration<double>(Clock::now() - start).count();
  phase->steps += metric(port, "dancemoe_node_batch_steps_total") - steps0;
  phase->step_sequences += metric(port, "dancemoe_node_batch_step_sequences_total") - sequences0;
  phase->interjections += metric(port, "dancemoe_node_batch_interjections_total") - interjections0;
  phase->step_tokens += metric(port, "dancemoe_node_batch_step_tokens_total") - step_tokens0;
  phase->prompt_saved += metric(port, "dancemoe_node_prefix_cache_saved_tokens_total") - saved0;
}

std::string fmt_arrivals(int max_tokens, double think_ms) {
  char text[160];
  std::snprintf(text, sizeof text,
                "random arrivals (%d-%d tokens, 0-24 extra prompt words, think time mean %.0f ms)",
                std::max(1, max_tokens / 2), max_tokens * 3 / 2, think_ms);
  return text;
}

std::string history(int round, int words) {
  std::string text = "Conversation " + std::to_string(round * 7919 + 13) +
                     ". System: you are a careful assistant of the lab.";
  const char* const vocabulary[] = {"expert", "router", "token",  "layer",   "cluster", "node",
                                    "cache",  "prefix", "stream", "latency", "memory",  "batch"};
  uint32_t x = static_cast<uint32_t>(round) * 2654435761u + 1u;
  for (int i = 0; i < words; ++i) {
    x = x * 1664525u + 1013904223u;
    text += (i % 12 == 0 ? "\nUser: " : " ");
    text += vocabulary[(x >> 16) % 12];
  }
  return text + "\nAssistant:";
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "small";
  int rounds = 3;
  double lone_s = 8;
  double concurrent_s = 20;
  int n_clients = 16;
  int max_tokens = 32;
  int turns = 5;
  int history_words = 900;
  int threads = 0;
  std::string part1_prefix_cache;  // the node's default unless given
  bool rows_layout = false;
  std::string stream_interval;  // the node's default unless given
  Arrivals arrivals;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--preset") preset = argv[i + 1];
    if (flag == "--rounds") rounds = std::stoi(argv[i + 1]);
    if (flag == "--lone") lone_s = std::stod(argv[i + 1]);
    if (flag == "--concurrent") concurrent_s = std::stod(argv[i + 1]);
    if (flag == "--clients") n_clients = std::stoi(argv[i + 1]);
    if (flag == "--max-tokens") max_tokens = std::stoi(argv[i + 1]);
    if (flag == "--turns") turns = std::stoi(argv[i + 1]);
    if (flag == "--history") history_words = std::stoi(argv[i + 1]);
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
    if (flag == "--prefix-cache") part1_prefix_cache = argv[i + 1];
    if (flag == "--layout") rows_layout = std::string(argv[i + 1]) == "rows";
    if (flag == "--stream-interval") stream_interval = argv[i + 1];
    if (flag == "--arrivals") {
      const std::string kind = argv[i + 1];
      if (kind != "random" && kind != "lockstep") {
        std::fprintf(stderr, "--arrivals: expected lockstep or random, got '%s'\n", kind.c_str());
        return 2;
      }
      arrivals.random = kind == "random";
    }
    if (flag == "--think-ms") arrivals.think_ms = std::stod(argv[i + 1]);
  }
  const fs::path work = fs::path(DMOE_BUILD_DIR) / "bench-batching";
  fs::create_directories(work);
  const fs::path model_dir = fs::path(DMOE_BUILD_DIR) / "bench-models" / preset;
  if (!bench::ensure_preset(preset, model_dir)) return 1;
  int errors = 0;

  // Part 1: one stream vs N streams, interleaved.
  {
    Node node;
    std::vector<std::string> flags = {"--max-batch", std::to_string(n_clients)};
    if (rows_layout) flags.push_back("--rows-layout");
    if (!stream_interval.empty()) flags.insert(flags.end(), {"--stream-interval", stream_interval});
    if (!part1_prefix_cache.empty()) {
      flags.insert(flags.end(), {"--prefix-cache", part1_prefix_cache});
    }
    if (!start_node(model_dir, work, "batching", flags, threads, &node)) {
      return 1;
    }
    const int probe_threads =
        threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    Phase warm;
    // First pages, pools, sockets, every HTTP worker and allocator arena:
    // one concurrent phase, so the growth measured after it is what stays.
    run_phase(node.port, n_clients, concurrent_s, max_tokens, 1, probe_threads, arrivals, &warm);
    const long rss_start = rss_kib(node.pid);
    const double cache_start = metric(node.port, "dancemoe_node_prefix_cache_bytes");
    Phase lone, many;
    for (int r = 0; r < rounds; ++r) {
      run_phase(node.port, 1, lone_s, max_tokens, 100000 + r, probe_threads, arrivals, &lone);
      run_phase(node.port, n_clients, concurrent_s, max_tokens, 200000 + r * 100, probe_threads,
                arrivals, &many);
    }
    const long rss_end = rss_kib(node.pid);
    const double cache_end = metric(node.port, "dancemoe_node_prefix_cache_bytes");
    errors += static_cast<int>(lone.errors.size() + many.errors.size());
    for (size_t i = 0; i < std::min<size_t>(many.errors.size(), 5); ++i) {
      std::printf("  error: %s\n", many.errors[i].c_str());
    }
    const double lone_tps = static_cast<double>(lone.tokens) / lone.seconds;
    const double many_tps = static_cast<double>(many.tokens) / many.seconds;
    const double lone_ttft = quantile(lone.ttft, 0.5);
    const double many_ttft = quantile(many.ttft, 0.5);
    // The prefix cache fills up to its budget (--prefix-cache) by design;
    // everything else must stay flat.
    const double rest_start = static_cast<double>(rss_start) * 1024 - cache_start;
    const double rest_end = static_cast<double>(rss_end) * 1024 - cache_end;
    const double growth = rest_start > 0 ? (rest_end - rest_start) / rest_start : 0;
    std::printf(
        "preset %s, %d rounds of %.0f s alone + %.0f s with %d clients, %s, stream interval "
        "%s\n",
        preset.c_str(), rounds, lone_s, concurrent_s, n_clients,
        arrivals.random
            ? fmt_arrivals(max_tokens, arrivals.think_ms).c_str()
            : ("lockstep, " + std::to_string(max_tokens) + " tokens each back to back").c_str(),
        stream_interval.empty() ? "1 (default)" : stream_interval.c_str());
    // Mean width and step time: how full the batches were, and what a step
    // cost (compare bench_batched_forward's in-process step at that width).
    const auto width = [](const Phase& p) { return p.steps > 0 ? p.step_sequences / p.steps : 0; };
    const auto step_ms = [](const Phase& p) { return p.steps > 0 ? p.seconds / p.steps * 1e3 : 0; };
    std::printf(
        "one stream:  %.1f tokens/s, TTFT p50 %.1f ms (%zu requests); mean width %.1f, %.2f ms "
        "per step\n",
        lone_tps, lone_ttft * 1e3, lone.ttft.size(), width(lone), step_ms(lone));
    std::printf(
        "%d streams: %.1f tokens/s, TTFT p50 %.1f ms, p99 %.1f ms (%zu requests); mean width "
        "%.1f, %.2f ms per step; %.0f prompt steps run between layers\n",
        n_clients, many_tps, many_ttft * 1e3, quantile(many.ttft, 0.99) * 1e3, many.ttft.size(),
        width(many), step_ms(many), many.interjections);
    // What the steps ran besides one token per stream: prompt tokens left
    // after the prefix cache (each prompt step reads most experts again).
    const auto per_request = [](const Phase& p, double v) {
      return p.ttft.empty() ? 0 : v / static_cast<double>(p.ttft.size());
    };
    std::printf(
        "  per request: %.1f tokens run by steps (%.1f prompt tokens saved by the prefix cache), "
        "%.1f steps of which %.1f prompts' between layers\n",
        per_request(many, many.step_tokens), per_request(many, many.prompt_saved),
        per_request(many, many.steps), per_request(many, many.interjections));
    std::printf(
        "aggregate tokens/s ratio: %.2fx (target >= 4x); TTFT p50 ratio: %.2fx "
        "(target <= 3x); errors %zu%s\n",
        many_tps / lone_tps, many_ttft / lone_ttft, lone.errors.size() + many.errors.size(),
        arrivals.random ? " (the targets are stated for lockstep clients)" : "");
    const auto range = [](const std::vector<double>& v) {
      return std::make_pair(*std::min_element(v.begin(), v.end()),
                            *std::max_element(v.begin(), v.end()));
    };
    const auto [lone_lo, lone_hi] = range(lone.probe_gbs);
    const auto [many_lo, many_hi] = range(many.probe_gbs);
    const double lowest = std::min(lone_lo, many_lo);
    const double highest = std::max(lone_hi, many_hi);
    std::printf(
        "memory probe before each phase (%d threads): one stream %.1f-%.1f GB/s, %d streams "
        "%.1f-%.1f GB/s%s\n",
        probe_threads, lone_lo, lone_hi, n_clients, many_lo, many_hi,
        highest > 1.25 * lowest
            ? " -- NOT one memory phase (> 25 % apart): the ratios mix them; compare runs whose "
              "probes agree"
            : "");
    std::printf(
        "node RSS after warm-up %.1f MiB, end %.1f MiB, of which the prefix cache %.1f -> %.1f "
        "MiB (its budget); the rest %+.1f %%: %s, over %.0f s\n",
        rss_start / 1024.0, rss_end / 1024.0, cache_start / 1048576.0, cache_end / 1048576.0,
        growth * 100, std::abs(growth) <= 0.10 ? "flat within 10 %" : "NOT flat",
        lone.seconds + many.seconds);
  }

  // Part 2: a chat's second turn, with and without the prefix cache.
  if (turns <= 0) {
    std::printf("second chat turn: not measured (--turns %d)\n", turns);
  } else {
    Node cached, cold;
    if (!start_node(model_dir, work, "cached", {}, threads, &cached) ||
        !start_node(model_dir, work, "cold", {"--prefix-cache", "0"}, threads, &cold)) {
      return 1;
    }
    std::vector<double> with_cache, without;
    for (int t = 0; t < turns; ++t) {
      for (int which = 0; which < 2; ++which) {
        const int port = which == 0 ? cached.port : cold.port;
        // Different histories per turn and node: only the turn's own first
        // half can be reused.
        const std::string first = history(t * 2 + which, history_words);
        const Outcome one = complete(port, first, 16, 7);
        const Outcome two =
            complete(port, first + one.text + "\nUser: and then?\nAssistant:", 16, 8);
        if (!one.ok || !two.ok) {
          ++errors;
          std::printf("  error: %s%s\n", one.error.c_str(), two.error.c_str());
          continue;
        }
        (which == 0 ? with_cache : without).push_back(two.ttft_s);
      }
    }
    const double a = quantile(with_cache, 0.5);
    const double b = quantile(without, 0.5);
    std::printf(
        "second chat turn (history of %d words): TTFT p50 %.1f ms with the prefix cache, "
        "%.1f ms without: %.2fx (target <= 0.3x)\n",
        history_words, a * 1e3, b * 1e3, b > 0 ? a / b : 0.0);
  }
  std::printf("errors: %d\n", errors);
  return errors == 0 ? 0 : 2;
}
