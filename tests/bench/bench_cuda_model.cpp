// Single-GPU model benchmark of the medium preset (hidden 1024, 16 layers,
// 32 experts, top-8, bf16): prefill tokens/s (a 128-token prompt) and decode
// tokens/s (64 greedy steps), the weight bytes a decoded token reads and the
// bandwidth that implies, as a fraction of the device's peak -- with the MoE
// layers on the device (router, grouping, experts, combine without a host
// round trip), with and without decode-step CUDA graphs, and through the
// executor (routing and activations to the host and back each MoE layer:
// what a node with remote experts does) -- and on `--devices cuda:0,cpu`
// with half the experts in host RAM, computed by the CPU (the GPU's
// --device-memory set to half the experts' bytes).
//
//   build/cuda/tests/bench_cuda_model [--model DIR] [--prompt-tokens 128] [--gen-tokens 64]
//
// "of peak" relates the weight bytes a decoded token reads to the GPU's peak
// bandwidth; on cuda:0,cpu half of those bytes come from host memory.
//
// Without --model, the medium preset is generated (once) under the build tree.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/model/checkpoint.h"
#include "common/model/synthetic/synthetic_model.h"
#include "kernels/cuda/device.cuh"
#include "scheduler/cli/model/model_benchmark.h"
#include "tests/bench/bench_models.h"

using namespace dancemoe;
using namespace dancemoe::cli;  // the model benchmark harness

int main(int argc, char** argv) {
  std::filesystem::path model_dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models/medium";
  ModelBenchParams params;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model_dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--prompt-tokens")) params.prompt_tokens = std::stoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--gen-tokens")) params.gen_tokens = std::stoll(argv[i + 1]);
  }
  std::string why;
  if (kernels::cuda::device_count(&why) == 0) {
    std::printf("no CUDA device: %s\n", why.c_str());
    return 0;
  }
  kernels::cuda::DeviceInfo info;
  if (!kernels::cuda::device_info(0, &info, &why)) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  if (!bench::ensure_preset("medium", model_dir)) return 1;
  std::printf("GPU: %s, peak memory bandwidth %.0f GB/s\n", info.name.c_str(),
              info.peak_bandwidth_bytes_per_s / 1e9);
  std::printf("model %s, prompt %lld tokens, %lld decoded tokens, best of %d\n\n",
              model_dir.c_str(), static_cast<long long>(params.prompt_tokens),
              static_cast<long long>(params.gen_tokens), params.repeats);
  std::printf("%-34s %11s %10s %13s %12s %9s\n", "MoE layers", "prefill/s", "decode/s",
              "bytes/token", "decode GB/s", "of peak");
  struct Variant {
    const char* name;
    const char* devices;
    bool via_executor;
    bool graphs;
    bool half_in_host;
  };
  auto checkpoint = Checkpoint::open(model_dir);
  if (!checkpoint.is_ok()) {
    std::fprintf(stderr, "%s\n", checkpoint.status().to_string().c_str());
    return 1;
  }
  uint64_t expert_bytes = 0;  // every routed expert, as the GPU holds them (bf16)
  const ModelConfig& config = (*checkpoint)->config();
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    expert_bytes += static_cast<uint64_t>(config.n_experts) * 3 *
                    static_cast<uint64_t>(config.hidden_size * config.moe_intermediate_size) * 2;
  }
  for (const Variant& v :
       {Variant{"on the device, decode graphs", "cuda:0", false, true, false},
        Variant{"on the device, no graphs", "cuda:0", false, false, false},
        Variant{"through the executor (host trip)", "cuda:0", true, false, false},
        Variant{"cuda:0,cpu, half the experts on cpu", "cuda:0,cpu", true, false, true}}) {
    RuntimeOptions options;
    options.devices.devices = *backend::parse_device_list(v.devices);
    options.devices.experts_via_executor = v.via_executor;
    options.devices.cuda_graphs = v.graphs;
    if (v.half_in_host) options.devices.expert_memory["cuda:0"] = expert_bytes / 2;
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
    const double gbs = r->decode_tok_s * r->bytes_per_token / 1e9;
    std::printf("%-34s %11.1f %10.1f %13.0f %12.1f %8.1f%%\n", v.name, r->prefill_tok_s,
                r->decode_tok_s, r->bytes_per_token, gbs,
                100.0 * gbs * 1e9 / info.peak_bandwidth_bytes_per_s);
  }
  return 0;
}
