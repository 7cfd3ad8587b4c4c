// Quantization quality (issue 14): a GGUF quantization of the medium preset
// (default q8_0, written by `dancemoe quantize`, see bench_quant_model)
// against the same model in bf16 safetensors. Four runtimes -- each model in
// bf16 compute (the default) and in f32 compute (the reference: every
// weight widened exactly, f32 activations) -- are fed the same tokens: the
// prompt, then the greedy tokens of the bf16 model in bf16 compute (teacher
// forcing). At each of the 64 steps three pairs are compared -- whether
// their greedy tokens agree, the max |logit difference| and KL(a || b) of
// the next-token distributions:
//   target        quant (bf16 compute) vs bf16 (bf16 compute): what a user sees
//   weights only  quant (f32 compute)  vs bf16 (f32 compute): the error of the
//                 quantized weights alone, no activation rounding on either side
//   noise floor   bf16 (f32 compute)   vs bf16 (bf16 compute): how often greedy
//                 tokens flip on this random-weight model (near-tied top
//                 logits) for an error of compute-precision size
// Free-running agreement for the target pair (each model decoding its own
// greedy tokens) is printed too: the first step at which the sequences part.
//
//   build/release/tests/bench_quant_logits [--type q8_0] [--dir DIR] [--steps 64]
//
// Target: greedy tokens equal for >= 60 of 64 steps on every prompt (the
// target pair).
#include <algorithm>
#include <array>
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

// Agreement of one pair over the steps of one prompt.
struct Agreement {
  int64_t equal = 0;
  double max_diff = 0.0;
  double sum_kl = 0.0;
  double max_kl = 0.0;

  void add(const std::vector<float>& ref, const std::vector<float>& got) {
    equal += argmax(ref) == argmax(got) ? 1 : 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(ref[i]) - got[i]));
    }
    const double kl = kl_divergence(ref, got);
    sum_kl += kl;
    max_kl = std::max(max_kl, kl);
  }
};

// The runtimes, in the order of kNames.
enum Runtime { kBf16Bf16 = 0, kBf16F32 = 1, kQuantBf16 = 2, kQuantF32 = 3, kRuntimes = 4 };

struct Pair {
  const char* name;
  Runtime ref;
  Runtime got;
};
constexpr std::array<Pair, 3> kPairs = {Pair{"target", kBf16Bf16, kQuantBf16},
                                        Pair{"weights only", kBf16F32, kQuantF32},
                                        Pair{"noise floor", kBf16Bf16, kBf16F32}};

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models";
  std::string type = "q8_0";
  int64_t steps = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    if (flag == "--type") type = argv[i + 1];
    if (flag == "--steps") steps = std::stoll(argv[i + 1]);
  }
  const std::filesystem::path gguf = dir / ("medium-" + type + ".gguf");
  if (!std::filesystem::exists(gguf)) {
    std::fprintf(stderr, "%s is missing: run bench_quant_model first (it writes it)\n",
                 gguf.c_str());
    return 1;
  }
  std::array<std::unique_ptr<ModelRuntime>, kRuntimes> models;
  for (int m = 0; m < kRuntimes; ++m) {
    const bool quant = m == kQuantBf16 || m == kQuantF32;
    const bool f32 = m == kBf16F32 || m == kQuantF32;
    Result<std::unique_ptr<ModelRuntime>> r =
        open(quant ? gguf : dir / "medium", f32 ? ComputePrecision::kF32 : ComputePrecision::kBF16);
    if (!r.is_ok()) return fail(r.status());
    models[static_cast<size_t>(m)] = std::move(r).value();
  }
  auto tr = [&](int m) -> Transformer& { return models[static_cast<size_t>(m)]->transformer(); };
  const int64_t vocab = tr(kBf16Bf16).config().vocab_size;

  std::printf("%s vs bf16 (medium preset), %lld teacher-forced greedy steps per prompt\n",
              type.c_str(), static_cast<long long>(steps));
  std::printf("  target: %s in bf16 compute vs bf16 in bf16 compute\n", type.c_str());
  std::printf("  weights only: %s in f32 compute vs bf16 in f32 compute\n", type.c_str());
  std::printf("  noise floor: bf16 in f32 compute vs bf16 in bf16 compute\n");
  std::printf("%-13s %-7s %10s %14s %14s %12s %16s\n", "pair", "prompt", "equal", "max|dlogit|",
              "mean KL", "max KL", "free-run parts at");
  bool all_ok = true;
  std::mt19937_64 rng(2024);
  std::array<std::array<Agreement, 3>, 3> results{};
  std::array<int64_t, 3> parted_at{};
  for (int p = 0; p < 3; ++p) {
    // Three prompts of different lengths and random ids (the weights are
    // random, so text would mean nothing).
    std::vector<int32_t> prompt(static_cast<size_t>(8 + 24 * p));
    for (int32_t& id : prompt) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
    const int64_t capacity = static_cast<int64_t>(prompt.size()) + steps + 1;
    std::vector<KvCache> caches;
    std::array<std::vector<float>, kRuntimes> logits;
    for (int m = 0; m < kRuntimes; ++m) {
      Result<KvCache> c = tr(m).new_cache(capacity);
      if (!c.is_ok()) return fail(c.status());
      caches.push_back(std::move(c).value());
      if (Status s = tr(m).forward(prompt, caches.back(), LogitsMode::kLast,
                                   &logits[static_cast<size_t>(m)]);
          !s.is_ok()) {
        return fail(s);
      }
    }
    for (int64_t step = 0; step < steps; ++step) {
      for (size_t i = 0; i < kPairs.size(); ++i) {
        results[static_cast<size_t>(p)][i].add(logits[kPairs[i].ref], logits[kPairs[i].got]);
      }
      const int32_t next = argmax(logits[kBf16Bf16]);
      for (int m = 0; m < kRuntimes; ++m) {
        if (Status s = tr(m).forward(std::span(&next, 1), caches[static_cast<size_t>(m)],
                                     LogitsMode::kLast, &logits[static_cast<size_t>(m)]);
            !s.is_ok()) {
          return fail(s);
        }
      }
    }
    // Free running, the target pair: each model its own greedy tokens.
    int64_t parted = -1;
    {
      Result<KvCache> fr = tr(kBf16Bf16).new_cache(capacity);
      Result<KvCache> fq = tr(kQuantBf16).new_cache(capacity);
      if (!fr.is_ok() || !fq.is_ok()) return fail(fr.is_ok() ? fq.status() : fr.status());
      std::vector<float> a, b;
      (void)tr(kBf16Bf16).forward(prompt, *fr, LogitsMode::kLast, &a);
      (void)tr(kQuantBf16).forward(prompt, *fq, LogitsMode::kLast, &b);
      for (int64_t step = 0; step < steps; ++step) {
        const int32_t ta = argmax(a), tb = argmax(b);
        if (ta != tb) {
          parted = step;
          break;
        }
        (void)tr(kBf16Bf16).forward(std::span(&ta, 1), *fr, LogitsMode::kLast, &a);
        (void)tr(kQuantBf16).forward(std::span(&tb, 1), *fq, LogitsMode::kLast, &b);
      }
    }
    parted_at[static_cast<size_t>(p)] = parted;
    all_ok = all_ok && results[static_cast<size_t>(p)][0].equal >= steps * 60 / 64;
  }
  for (size_t i = 0; i < kPairs.size(); ++i) {
    for (size_t p = 0; p < 3; ++p) {
      const Agreement& a = results[p][i];
      const std::string parted = i != 0             ? "-"
                                 : parted_at[p] < 0 ? "never"
                                                    : "step " + std::to_string(parted_at[p]);
      std::printf("%-13s %-7zu %6lld/%-3lld %14.4f %14.3e %12.3e %16s\n", kPairs[i].name, p,
                  static_cast<long long>(a.equal), static_cast<long long>(steps), a.max_diff,
                  a.sum_kl / static_cast<double>(steps), a.max_kl, parted.c_str());
    }
  }
  std::printf("\ntarget: >= 60 of 64 greedy steps equal on every prompt: %s\n",
              all_ok ? "met" : "NOT met");
  return all_ok ? 0 : 1;
}
