// The batched forward alone (issue 16): one decode step of N sequences in
// one Transformer::forward_batch, in process -- no HTTP, no scheduler, no
// sampling -- so that the serving benchmark's ratio (bench_batching: 16
// streams vs one over HTTP) can be split into what the forward gives and what
// serving adds or loses. Each sequence first runs a prompt of its own; the
// widths are interleaved over the rounds (the machine is shared and noisy).
// Prints per width the step time (mean and best), tokens/s and the ratio to
// one sequence; and the marginal cost of a sequence between the two widest
// batches (their experts' weights are all read either way, so the difference
// is compute). Also per width: the weight bytes a step reads (every dense
// matrix once, the experts its tokens chose once each) and the rate they are
// read at; and, against the streaming-read bandwidth probed after every
// round (the fastest probe counts), the fewest milliseconds such a step can
// take and so the largest ratio to one sequence the memory allows: a lone
// sequence reads few enough bytes that part of them stay in the last-level
// cache, a wide step reads every expert from DRAM.
//
//   build/release/tests/bench_batched_forward [--model DIR] [--threads 2]
//       [--rounds 3] [--steps 8] [--prompt 40] [--widths 1,4,8,16] [--rows-layout]
//
// --rows-layout keeps the weights in their rows (RuntimeOptions::interleave_k
// false): the A/B of the interleaved expert kernels (kernels/interleave.h).
//
// Without --model, the medium preset is generated (once) under the build tree.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"
#include "common/model/synthetic/synthetic_model.h"
#include "kernels/cpu/memory_bandwidth.h"
#include "tests/bench/bench_models.h"

using namespace dancemoe;
using Clock = std::chrono::steady_clock;

namespace {

struct Width {
  int n = 0;
  std::vector<double> step_ms;
  double bytes = 0;  // weight bytes read, summed over the timed steps
};

std::vector<int> parse_widths(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

// `steps` decode steps of `n` sequences after a prompt each; the step times,
// and the weight bytes the steps read added to *bytes.
Result<std::vector<double>> run_width(ModelRuntime& model, int n, int steps, int prompt,
                                      uint32_t seed, double* bytes) {
  Transformer& tf = model.transformer();
  const Checkpoint& ckpt = model.checkpoint();
  const int vocab = static_cast<int>(tf.config().vocab_size);
  std::mt19937 rng(seed);
  auto token = [&] { return static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)); };
  std::vector<KvCache> caches;
  std::vector<float> logits;
  for (int i = 0; i < n; ++i) {
    DMOE_ASSIGN_OR_RETURN(KvCache cache, tf.new_cache(prompt + steps + 1));
    caches.push_back(std::move(cache));
    std::vector<int32_t> tokens(static_cast<size_t>(prompt));
    for (int32_t& t : tokens) t = token();
    const SequenceStep step{tokens, &caches.back(), true};
    DMOE_RETURN_IF_ERROR(tf.forward_batch(std::span<const SequenceStep>(&step, 1), &logits));
  }
  std::vector<int32_t> next(static_cast<size_t>(n));
  std::vector<double> times;
  // Each expert's bytes, looked up before the timed steps: the checkpoint
  // finds them by tensor name, which in the observer (inside the step) took
  // a twelfth of a small 16-wide step.
  const ModelConfig& config = tf.config();
  std::vector<double> expert_bytes(static_cast<size_t>(config.n_layers * config.n_experts));
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config.n_experts; ++e) {
      expert_bytes[static_cast<size_t>(l * config.n_experts + e)] =
          static_cast<double>(ckpt.expert_bytes(l, e));
    }
  }
  std::vector<bool> chosen(static_cast<size_t>(config.n_experts));  // one layer's experts
  tf.set_routing_observer([&](int64_t layer, const RoutingDecision& routing) {
    std::fill(chosen.begin(), chosen.end(), false);
    for (int32_t e : routing.expert_ids) {
      if (chosen[static_cast<size_t>(e)]) continue;
      chosen[static_cast<size_t>(e)] = true;
      *bytes += expert_bytes[static_cast<size_t>(layer * config.n_experts + e)];
    }
  });
  for (int s = 0; s < steps; ++s) {
    std::vector<SequenceStep> batch;
    for (int i = 0; i < n; ++i) {
      next[static_cast<size_t>(i)] = token();
      batch.push_back({std::span<const int32_t>(&next[static_cast<size_t>(i)], 1),
                       &caches[static_cast<size_t>(i)], true});
    }
    *bytes += static_cast<double>(ckpt.dense_bytes_read(n));
    const Clock::time_point start = Clock::now();
    DMOE_RETURN_IF_ERROR(tf.forward_batch(batch, &logits));
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  tf.set_routing_observer({});
  return times;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path model_dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models/medium";
  int threads = 2, rounds = 3, steps = 8, prompt = 40;
  std::string widths_text = "1,4,8,16";
  std::vector<int> widths;
  bool rows_layout = false;
  try {
    for (int i = 1; i < argc; i += 2) {
      if (!std::strcmp(argv[i], "--rows-layout")) {
        rows_layout = true;
        --i;  // a flag without a value
        continue;
      }
      if (i + 1 >= argc) break;
      if (!std::strcmp(argv[i], "--model")) model_dir = argv[i + 1];
      if (!std::strcmp(argv[i], "--threads")) threads = std::stoi(argv[i + 1]);
      if (!std::strcmp(argv[i], "--rounds")) rounds = std::stoi(argv[i + 1]);
      if (!std::strcmp(argv[i], "--steps")) steps = std::stoi(argv[i + 1]);
      if (!std::strcmp(argv[i], "--prompt")) prompt = std::stoi(argv[i + 1]);
      if (!std::strcmp(argv[i], "--widths")) widths_text = argv[i + 1];
    }
    widths = parse_widths(widths_text);
  } catch (const std::exception&) {
    std::fprintf(stderr, "bad arguments: a number was expected (see bench_batched_forward.cpp)\n");
    return 2;
  }
  const bool widths_ok =
      std::all_of(widths.begin(), widths.end(), [](int n) { return n >= 1 && n <= 256; });
  if (widths.empty() || !widths_ok || threads < 1 || rounds < 1 || steps < 1 || prompt < 1) {
    std::fprintf(stderr, "bad arguments: see the header of bench_batched_forward.cpp\n");
    return 2;
  }
  if (!bench::ensure_preset("medium", model_dir)) return 1;
  RuntimeOptions options;
  options.devices.n_threads = threads;
  options.interleave_k = !rows_layout;
  auto model = ModelRuntime::open(model_dir, options);
  if (!model.is_ok()) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  Transformer& tf = (*model)->transformer();
  std::printf("model %s, %d threads, %s, %d rounds x %d steps per width, prompts of %d tokens\n",
              model_dir.c_str(), threads, tf.description().c_str(), rounds, steps, prompt);

  std::map<int, Width> by_width;
  double membw = 0;  // the fastest probe, bytes/s
  for (int round = 0; round < rounds; ++round) {
    for (int n : widths) {
      Width& w = by_width[n];
      Result<std::vector<double>> t =
          run_width(**model, n, steps, prompt, static_cast<uint32_t>(1000 * round + n), &w.bytes);
      if (!t.is_ok()) {
        std::fprintf(stderr, "width %d: %s\n", n, t.status().to_string().c_str());
        return 1;
      }
      w.n = n;
      w.step_ms.insert(w.step_ms.end(), t->begin(), t->end());
    }
    membw = std::max(
        membw, kernels::measure_read_bandwidth_bytes_per_s(int64_t{256} << 20, threads, 0.25));
  }
  const double one = by_width.count(1) ? 1000.0 / mean(by_width[1].step_ms) : 0;
  std::printf("%6s %12s %12s %10s %14s %10s %9s %12s %10s\n", "width", "step mean", "step best",
              "tokens/s", "x one sequence", "MB/step", "GB/s", "memory-bound", "x one max");
  for (const auto& [n, w] : by_width) {
    const double tok_s = 1000.0 * n / mean(w.step_ms);
    const double step_bytes = w.bytes / static_cast<double>(w.step_ms.size());
    const double floor_ms = 1000.0 * step_bytes / membw;  // every byte at the probe's rate
    std::printf(
        "%6d %9.1f ms %9.1f ms %10.1f %14s %10.1f %9.1f %9.2f ms %10s\n", n, mean(w.step_ms),
        *std::min_element(w.step_ms.begin(), w.step_ms.end()), tok_s,
        one > 0 ? (std::to_string(tok_s / one).substr(0, 4) + "x").c_str() : "-", step_bytes / 1e6,
        step_bytes / mean(w.step_ms) / 1e6, floor_ms,
        one > 0 ? (std::to_string(1000.0 * n / floor_ms / one).substr(0, 4) + "x").c_str() : "-");
  }
  std::printf(
      "memory-bound: a step's bytes at the fastest streaming-read probe (%.1f GB/s, %d "
      "threads); x one max: that step's tokens/s over one sequence's measured rate\n",
      membw / 1e9, threads);
  if (by_width.size() >= 2) {
    const Width& a = std::prev(by_width.end(), 2)->second;
    const Width& b = std::prev(by_width.end())->second;
    std::printf("a sequence more between widths %d and %d: %.1f ms per step\n", a.n, b.n,
                (mean(b.step_ms) - mean(a.step_ms)) / (b.n - a.n));
  }
  return 0;
}
