// Quantization quality (issue 14): a GGUF quantization of the medium preset
// (default q8_0, written by `dancemoe quantize`, see bench_quant_model)
// against the same model in bf16 safetensors, both in bf16 compute mode.
// For each of 3 prompts, the bf16 model decodes 64 greedy tokens; the
// quantized model is fed the same tokens (teacher forcing) and at each of
// the 64 steps we compare its greedy token with bf16's, and the two
// next-token distributions: max |logit difference| and KL(bf16 || quant).
// Free-running agreement (each model decoding its own tokens) is printed
// too: the first step at which the greedy sequences part.
//
//   build/release/tests/bench_quant_logits [--type q8_0] [--dir DIR] [--steps 64]
//                                          [--precision bf16|f32]
// --type bf16-f32 compares the bf16 model computed in f32 with bf16 compute
// instead: the noise floor of greedy agreement on this random-weight model.
//
// Target: greedy tokens equal for >= 60 of 64 steps on every prompt.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"

using namespace dancemoe;

namespace {

int fail(const Status& s) {
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return 1;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// KL(p || q) of the softmaxes of two logit vectors, in nats.
double kl_divergence(const std::vector<float>& p_logits, const std::vector<float>& q_logits) {
  auto log_softmax = [](const std::vector<float>& x) {
    const double m = *std::max_element(x.begin(), x.end());
    double sum = 0.0;
    for (float v : x) sum += std::exp(static_cast<double>(v) - m);
    std::vector<double> out(x.size());
    const double log_sum = std::log(sum) + m;
    for (size_t i = 0; i < x.size(); ++i) out[i] = static_cast<double>(x[i]) - log_sum;
    return out;
  };
  const std::vector<double> lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0.0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

Result<std::unique_ptr<ModelRuntime>> open(const std::filesystem::path& path,
                                           ComputePrecision precision) {
  RuntimeOptions options;
  DMOE_ASSIGN_OR_RETURN(options.devices.devices, backend::parse_device_list("cpu"));
  options.devices.n_threads = 2;
  options.precision = precision;
  return ModelRuntime::open(path, options);
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models";
  std::string type = "q8_0";
  int64_t steps = 64;
  ComputePrecision precision = ComputePrecision::kBF16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    if (flag == "--precision" && std::string(argv[i + 1]) == "f32")
      precision = ComputePrecision::kF32;
    if (flag == "--type") type = argv[i + 1];
    if (flag == "--steps") steps = std::stoll(argv[i + 1]);
  }
  // --type bf16-f32: the noise floor -- the bf16 model itself computed in f32
  // against bf16 compute (how often greedy tokens flip on this model for an
  // error of that size).
  const bool floor = type == "bf16-f32";
  const std::filesystem::path gguf = floor ? dir / "medium" : dir / ("medium-" + type + ".gguf");
  if (!std::filesystem::exists(gguf)) {
    std::fprintf(stderr, "%s is missing: run bench_quant_model first (it writes it)\n",
                 gguf.c_str());
    return 1;
  }
  Result<std::unique_ptr<ModelRuntime>> ref = open(dir / "medium", precision);
  if (!ref.is_ok()) return fail(ref.status());
  Result<std::unique_ptr<ModelRuntime>> quant =
      open(gguf, floor ? ComputePrecision::kF32 : precision);
  if (!quant.is_ok()) return fail(quant.status());
  Transformer& tr = (*ref)->transformer();
  Transformer& tq = (*quant)->transformer();
  const int64_t vocab = tr.config().vocab_size;

  std::printf("%s vs bf16 (medium preset), %lld greedy steps per prompt, %s compute\n",
              type.c_str(), static_cast<long long>(steps),
              precision == ComputePrecision::kF32 ? "f32" : "bf16");
  std::printf("%-8s %10s %14s %14s %12s %16s\n", "prompt", "equal", "max|dlogit|", "mean KL",
              "max KL", "free-run parts at");
  bool all_ok = true;
  std::mt19937_64 rng(2024);
  for (int p = 0; p < 3; ++p) {
    // Three prompts of different lengths and random ids (the weights are
    // random, so text would mean nothing).
    std::vector<int32_t> prompt(static_cast<size_t>(8 + 24 * p));
    for (int32_t& id : prompt) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
    Result<KvCache> cr = tr.new_cache(static_cast<int64_t>(prompt.size()) + steps + 1);
    Result<KvCache> cq = tq.new_cache(static_cast<int64_t>(prompt.size()) + steps + 1);
    if (!cr.is_ok() || !cq.is_ok()) return fail(cr.is_ok() ? cq.status() : cr.status());
    std::vector<float> lr, lq;
    if (Status s = tr.forward(prompt, *cr, LogitsMode::kLast, &lr); !s.is_ok()) return fail(s);
    if (Status s = tq.forward(prompt, *cq, LogitsMode::kLast, &lq); !s.is_ok()) return fail(s);
    int64_t equal = 0;
    double max_diff = 0.0, sum_kl = 0.0, max_kl = 0.0;
    for (int64_t step = 0; step < steps; ++step) {
      const int32_t next = argmax(lr);
      equal += argmax(lq) == next ? 1 : 0;
      for (int64_t i = 0; i < vocab; ++i) {
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(lr[static_cast<size_t>(i)]) -
                                                lq[static_cast<size_t>(i)]));
      }
      const double kl = kl_divergence(lr, lq);
      sum_kl += kl;
      max_kl = std::max(max_kl, kl);
      if (Status s = tr.forward(std::span(&next, 1), *cr, LogitsMode::kLast, &lr); !s.is_ok()) {
        return fail(s);
      }
      if (Status s = tq.forward(std::span(&next, 1), *cq, LogitsMode::kLast, &lq); !s.is_ok()) {
        return fail(s);
      }
    }
    // Free running: each model its own greedy tokens; the first differing step.
    int64_t parted = -1;
    {
      Result<KvCache> fr = tr.new_cache(static_cast<int64_t>(prompt.size()) + steps + 1);
      Result<KvCache> fq = tq.new_cache(static_cast<int64_t>(prompt.size()) + steps + 1);
      if (!fr.is_ok() || !fq.is_ok()) return fail(fr.is_ok() ? fq.status() : fr.status());
      std::vector<float> a, b;
      (void)tr.forward(prompt, *fr, LogitsMode::kLast, &a);
      (void)tq.forward(prompt, *fq, LogitsMode::kLast, &b);
      for (int64_t step = 0; step < steps && parted < 0; ++step) {
        const int32_t ta = argmax(a), tb = argmax(b);
        if (ta != tb) {
          parted = step;
          break;
        }
        (void)tr.forward(std::span(&ta, 1), *fr, LogitsMode::kLast, &a);
        (void)tq.forward(std::span(&tb, 1), *fq, LogitsMode::kLast, &b);
      }
    }
    all_ok = all_ok && equal >= steps * 60 / 64;
    std::printf("%-8d %6lld/%-3lld %14.4f %14.3e %12.3e %16s\n", p, static_cast<long long>(equal),
                static_cast<long long>(steps), max_diff, sum_kl / static_cast<double>(steps),
                max_kl, parted < 0 ? "never" : ("step " + std::to_string(parted)).c_str());
  }
  std::printf("\ntarget: >= 60 of 64 greedy steps equal on every prompt: %s\n",
              all_ok ? "met" : "NOT met");
  return all_ok ? 0 : 1;
}
