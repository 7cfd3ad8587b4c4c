// Measures single-node prefill and decode speed of a loaded model, and the
// weight bytes a decoded token reads, for `dancemoe bench` and
// tests/bench/bench_model.cpp.
//
// Prefill: one forward over `prompt_tokens` ids, best of `repeats`. Decode:
// `gen_tokens` greedy steps after that prompt, timed as a whole, best of
// `repeats`. Bytes per token: every dense matrix a token touches (attention,
// routers, dense MLPs, lm_head, one embedding row) plus the experts the
// router actually chose for that token, averaged over the decode steps --
// the denominator of the memory roofline.
#pragma once

#include <cstdint>

#include "common/assembly/model_runtime.h"
#include "common/base/status.h"

namespace dancemoe::cli {

struct ModelBenchParams {
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  int repeats = 3;
  uint64_t seed = 1;  // of the random prompt
};

struct ModelBenchResult {
  int n_threads = 0;
  double prefill_tok_s = 0;
  double decode_tok_s = 0;
  double bytes_per_token = 0;  // weight bytes read per decoded token
};

Result<ModelBenchResult> run_model_benchmark(ModelRuntime& model, const ModelBenchParams& params);

}  // namespace dancemoe::cli
