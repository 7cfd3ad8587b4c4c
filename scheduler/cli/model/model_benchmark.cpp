#include "scheduler/cli/model/model_benchmark.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "kernels/cpu/memory_bandwidth.h"
#include "scheduler/cli/model/memory_usage.h"

namespace dancemoe::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The paired probe: short enough to sit beside every decode run (~0.3 s),
// long enough for the fastest 16 MiB chunk per thread to be a steady figure.
constexpr int64_t kProbeBytes = int64_t{256} << 20;
constexpr double kProbeSeconds = 0.25;

// Dense bytes a GPU reads per decoded token: the CUDA backend holds the
// dense matrices in bf16 and the vectors in f32 whatever the checkpoint
// stores (common/backend/cuda/device_weights.h); of the embedding, one row.
uint64_t gpu_dense_bytes_read(const Checkpoint& checkpoint) {
  const ModelConfig& c = checkpoint.config();
  uint64_t bytes = 0;
  for (const RequiredTensor& req : required_tensors(c)) {
    if (is_expert_matrix_role(req.role)) continue;
    const TensorLocation& t = checkpoint.tensor(req.role, req.layer, req.expert);
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    bytes += t.shape.size() >= 2 ? n * 2 : n * 4;
  }
  const uint64_t embed = static_cast<uint64_t>(c.vocab_size * c.hidden_size) * 2;
  return bytes - (c.tie_word_embeddings ? 0 : embed) + static_cast<uint64_t>(c.hidden_size) * 2;
}

}  // namespace

double ModelBenchResult::roofline_frac() const {
  if (decode_membw <= 0 || bytes_per_token <= 0) return 0;
  return decode_tok_s * bytes_per_token / decode_membw;
}

Result<ModelBenchResult> run_model_benchmark(ModelRuntime& model, const ModelBenchParams& params) {
  if (params.prompt_tokens < 1 || params.gen_tokens < 1 || params.repeats < 1) {
    return invalid_argument(
        "benchmark needs at least one prompt token, one generated token and one repeat");
  }
  Transformer& tf = model.transformer();
  const ModelConfig& c = tf.config();
  std::mt19937_64 rng(params.seed);
  std::vector<int32_t> prompt(static_cast<size_t>(params.prompt_tokens));
  for (int32_t& id : prompt) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(c.vocab_size));

  DMOE_ASSIGN_OR_RETURN(KvCache cache, tf.new_cache(params.prompt_tokens + params.gen_tokens));
  std::vector<float> logits;
  ModelBenchResult result;
  result.n_threads = model.forward_pool().size();

  // Warm-up: touches every scratch buffer and the KV cache pages once.
  DMOE_RETURN_IF_ERROR(tf.forward(prompt, cache, LogitsMode::kLast, &logits));

  double best_prefill = 1e30;
  for (int r = 0; r < params.repeats; ++r) {
    cache.clear();
    const auto start = std::chrono::steady_clock::now();
    DMOE_RETURN_IF_ERROR(tf.forward(prompt, cache, LogitsMode::kLast, &logits));
    best_prefill = std::min(best_prefill, seconds_since(start));
  }
  result.prefill_tok_s = static_cast<double>(params.prompt_tokens) / best_prefill;

  // Expert sizes looked up before timing: the observer runs inside the
  // timed decode loop. Each is the bytes its device reads: as the store
  // holds it (--expert-type converts) on a CPU device, as bf16 on a GPU
  // (the CUDA backend dequantizes at upload).
  std::vector<uint64_t> expert_size(static_cast<size_t>(c.n_layers * c.n_experts), 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (!c.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < c.n_experts; ++e) {
      expert_size[static_cast<size_t>(l * c.n_experts + e)] =
          model.experts().expert_bytes({static_cast<int32_t>(l), static_cast<int32_t>(e)});
    }
  }
  const std::vector<ExpertRef> resident = model.experts().resident_keys();
  const std::vector<int32_t> resident_device = model.experts().resident_devices();
  const uint64_t bf16_expert =
      3 * static_cast<uint64_t>(c.hidden_size) * static_cast<uint64_t>(c.moe_intermediate_size) * 2;
  for (size_t i = 0; i < resident.size(); ++i) {
    if (model.devices()[static_cast<size_t>(resident_device[i])].kind ==
        backend::DeviceKind::kCuda) {
      expert_size[static_cast<size_t>(resident[i].layer * c.n_experts + resident[i].expert)] =
          bf16_expert;
    }
  }
  const bool dense_on_gpu =
      !model.devices().empty() && model.devices().front().kind == backend::DeviceKind::kCuda;
  uint64_t expert_bytes = 0;
  std::set<std::pair<int64_t, int32_t>> token_experts;
  double best_decode = 1e30;
  result.peak_rss_bytes = peak_resident_bytes();
  std::vector<double> probes;  // before run 0, then after each run
  auto probe = [&] {
    if (!params.probe_bandwidth) return;
    probes.push_back(
        kernels::measure_read_bandwidth_bytes_per_s(kProbeBytes, result.n_threads, kProbeSeconds));
  };
  probe();
  for (int r = 0; r < params.repeats; ++r) {
    cache.clear();
    tf.set_routing_observer({});
    DMOE_RETURN_IF_ERROR(tf.forward(prompt, cache, LogitsMode::kLast, &logits));
    expert_bytes = 0;
    tf.set_routing_observer([&](int64_t layer, const RoutingDecision& routing) {
      token_experts.clear();
      for (int32_t e : routing.expert_ids) token_experts.insert({layer, e});
      for (const auto& [l, e] : token_experts) {
        expert_bytes += expert_size[static_cast<size_t>(l * c.n_experts + e)];
      }
    });
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < params.gen_tokens; ++step) {
      const int32_t next =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      DMOE_RETURN_IF_ERROR(tf.forward(std::span(&next, 1), cache, LogitsMode::kLast, &logits));
    }
    const double seconds = seconds_since(start);
    result.peak_rss_bytes = std::max(result.peak_rss_bytes, current_resident_bytes());
    probe();
    DecodeRun run;
    run.tok_s = static_cast<double>(params.gen_tokens) / seconds;
    if (params.probe_bandwidth) {
      run.membw_bytes_per_s = std::max(probes[probes.size() - 2], probes.back());
    }
    if (seconds < best_decode) {
      best_decode = seconds;
      result.decode_membw = run.membw_bytes_per_s;
    }
    result.decode_runs.push_back(run);
  }
  tf.set_routing_observer({});
  result.decode_tok_s = static_cast<double>(params.gen_tokens) / best_decode;
  result.bytes_per_token =
      static_cast<double>(dense_on_gpu ? gpu_dense_bytes_read(model.checkpoint())
                                       : model.checkpoint().dense_bytes_read(1)) +
      static_cast<double>(expert_bytes) / static_cast<double>(params.gen_tokens);
  return result;
}

}  // namespace dancemoe::cli
