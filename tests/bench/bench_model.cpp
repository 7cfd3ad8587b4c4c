// Single-node model benchmark on the `medium` preset (hidden 1024, 16 layers,
// 32 experts, top-8, bf16): decode and prefill tokens/s at 1 and 2 threads,
// weight bytes per decoded token, measured streaming-read bandwidth at 1 and
// 2 threads, the fraction of the memory roofline decode reaches, and peak
// resident memory against the weight bytes. Run in Release on a quiet machine:
//
//   build/release/tests/bench_model [--model DIR] [--prompt-tokens 128] [--gen-tokens 64]
//
// Without --model, the medium preset is generated (once) under the build tree.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/model/synthetic/synthetic_model.h"
#include "kernels/cpu/memory_bandwidth.h"
#include "scheduler/cli/model/model_benchmark.h"
#include "tests/bench/bench_models.h"

using namespace dancemoe;
using namespace dancemoe::cli;  // the model benchmark harness

int main(int argc, char** argv) {
  std::filesystem::path model_dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models/medium";
  ModelBenchParams params;
  params.probe_bandwidth = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model_dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--prompt-tokens")) params.prompt_tokens = std::stoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--gen-tokens")) params.gen_tokens = std::stoll(argv[i + 1]);
  }
  if (!bench::ensure_preset("medium", model_dir)) return 1;
  std::printf("model %s, prompt %lld tokens, %lld decoded tokens, CPU level %s\n\n",
              model_dir.c_str(), static_cast<long long>(params.prompt_tokens),
              static_cast<long long>(params.gen_tokens),
              std::string(kernels::cpu_level_name(kernels::cpu_kernels().level)).c_str());
  std::printf(
      "membw and roofline: burst (fastest 16 MiB read, beside the fastest decode run) / "
      "sustained (median 1 GiB pass, after the runs)\n");
  std::printf("%8s %11s %10s %13s %16s %16s %13s %8s\n", "threads", "prefill/s", "decode/s",
              "bytes/token", "membw GB/s", "roofline tok/s", "of roofline", "rss/wts");
  for (int threads : {1, 2}) {
    RuntimeOptions options;
    options.devices.n_threads = threads;
    auto model = ModelRuntime::open(model_dir, options);
    if (!model.is_ok()) {
      std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
      return 1;
    }
    auto r = run_model_benchmark(**model, params);
    if (!r.is_ok()) {
      std::fprintf(stderr, "%s\n", r.status().to_string().c_str());
      return 1;
    }
    const double weights = static_cast<double>((*model)->resident_weight_bytes());
    const double rss_ratio = static_cast<double>(r->peak_rss_bytes) / weights;
    model->reset();
    const double membw = r->decode_membw;
    const double sustained =
        kernels::measure_sustained_read_bandwidth_bytes_per_s(int64_t{1} << 30, threads, 2.0);
    const double roofline = membw / r->bytes_per_token;
    const double roofline_sustained = sustained / r->bytes_per_token;
    std::printf("%8d %11.1f %10.1f %13.0f %8.1f / %5.1f %8.1f / %5.1f %5.0f%% / %3.0f%% %8.3f\n",
                threads, r->prefill_tok_s, r->decode_tok_s, r->bytes_per_token, membw / 1e9,
                sustained / 1e9, roofline, roofline_sustained, 100.0 * r->decode_tok_s / roofline,
                100.0 * r->decode_tok_s / roofline_sustained, rss_ratio);
  }
  std::printf(
      "\ntargets (issue 2): decode >= 80%% of roofline at 2 threads, prefill >= 600 tok/s at "
      "2 threads, peak RSS <= 1.2 x weights\n");
  return 0;
}
