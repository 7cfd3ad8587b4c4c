// Measures single-node prefill and decode speed of a loaded model, and the
// weight bytes a decoded token reads, for `dancemoe bench` and
// tests/bench/bench_model.cpp.
//
// Prefill: one forward over `prompt_tokens` ids, best of `repeats`. Decode:
// `gen_tokens` greedy steps after that prompt, timed as a whole, best of
// `repeats`. With `probe_bandwidth`, the memory's streaming-read bandwidth
// (kernels/cpu/memory_bandwidth.h, burst) is measured just before the first
// decode run and just after each one, on the model's thread count: a shared
// host's memory bandwidth changes from second to second (a Zen 4 VM here:
// ~36 and ~65 GB/s phases lasting seconds), so a roofline fraction means
// something only against the bandwidth of the moment the decode ran. Each
// run's bandwidth is the higher of its two neighbours (a phase change
// beside a run lowers its fraction, never raises it). Bytes per token: every dense matrix a token
// touches (attention, routers, dense MLPs, lm_head, one embedding row) plus the experts the router
// actually chose for that token, averaged over the decode steps -- the denominator of the memory
// roofline.
#pragma once

#include <cstdint>
#include <vector>

#include "common/assembly/model_runtime.h"
#include "common/base/status.h"

namespace dancemoe::cli {

struct ModelBenchParams {
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  int repeats = 3;
  uint64_t seed = 1;             // of the random prompt
  bool probe_bandwidth = false;  // CPU runs: the paired probes above
};

struct DecodeRun {
  double tok_s = 0;
  double membw_bytes_per_s = 0;  // 0 without probe_bandwidth
};

struct ModelBenchResult {
  int n_threads = 0;
  double prefill_tok_s = 0;
  double decode_tok_s = 0;             // of the fastest decode run
  double bytes_per_token = 0;          // weight bytes read per decoded token
  double decode_membw = 0;             // bytes/s beside the fastest run (probe_bandwidth)
  std::vector<DecodeRun> decode_runs;  // in the order they ran
  // Peak resident bytes of the process while it loaded and ran the model --
  // not counting the probes' own buffers (VmHWM before the first probe, and
  // the resident bytes after each decode run).
  uint64_t peak_rss_bytes = 0;

  // decode_tok_s over the memory roofline (decode_membw / bytes_per_token);
  // 0 without probes.
  double roofline_frac() const;
};

Result<ModelBenchResult> run_model_benchmark(ModelRuntime& model, const ModelBenchParams& params);

}  // namespace dancemoe::cli
