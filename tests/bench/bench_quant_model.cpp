// Quantized-model benchmark (issue 14): the medium preset (hidden 1024, 16
// layers, 32 experts, top-8) in bf16 safetensors and as GGUF files written by
// `dancemoe quantize` (q8_0, q4_k_m by default), all loaded in one process and
// timed in interleaved rounds (bf16, q8_0, q4_k_m, bf16, ...), each keeping
// its best round: prefill of a 128-token prompt and decode of 64 tokens at 2
// threads, weight bytes per decoded token, the memory roofline (streaming
// read bandwidth / bytes per token) and the fraction of it decode reaches --
// the bandwidth probed beside each decode run (model_benchmark.h: a shared
// host's bandwidth changes from second to second) --
// and every model's speed relative to bf16. Run in Release on a quiet
// machine:
//
//   build/release/tests/bench_quant_model [--types q8_0,q4_k_m] [--threads 2]
//        [--rounds 3] [--prompt-tokens 128] [--gen-tokens 64] [--dir DIR]
//
// The models are generated (once) under DIR (default: the build tree's
// bench-models/); the GGUF files are what `dancemoe quantize --model
// DIR/medium --out DIR/medium-TYPE.gguf --type TYPE` writes.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"
#include "common/model/gguf/gguf_quantize.h"
#include "common/model/synthetic/synthetic_model.h"
#include "kernels/cpu/memory_bandwidth.h"
#include "scheduler/cli/model/model_benchmark.h"
#include "tests/bench/bench_models.h"

using namespace dancemoe;

namespace {

struct Args {
  std::filesystem::path dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models";
  std::vector<std::string> types = {"q8_0", "q4_k_m"};
  int threads = 2;
  int rounds = 3;
  cli::ModelBenchParams bench;
};

int fail(const Status& s) {
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return 1;
}

Status ensure_models(const Args& a) {
  const std::filesystem::path hf = a.dir / "medium";
  {
    SyntheticModelSpec spec;
    spec.preset = "medium";
    DMOE_RETURN_IF_ERROR(bench::ensure_synthetic_model(spec, hf));
  }
  for (const std::string& type : a.types) {
    const std::filesystem::path out = a.dir / ("medium-" + type + ".gguf");
    if (std::filesystem::exists(out)) continue;
    std::printf("quantizing to %s ...\n", out.c_str());
    DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::open(hf));
    gguf::QuantizeOptions options;
    DMOE_ASSIGN_OR_RETURN(options.mixture, gguf::parse_mixture(type));
    options.n_threads = 2;
    DMOE_ASSIGN_OR_RETURN(gguf::QuantizeSummary summary,
                          gguf::quantize_to_gguf(*ckpt, out, options));
    (void)summary;
  }
  return Status::ok();
}

struct Entry {
  std::string name;
  std::filesystem::path path;
  std::unique_ptr<ModelRuntime> model;
  cli::ModelBenchResult best;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--dir") a.dir = value;
    if (flag == "--threads") a.threads = std::stoi(value);
    if (flag == "--rounds") a.rounds = std::stoi(value);
    if (flag == "--prompt-tokens") a.bench.prompt_tokens = std::stoll(value);
    if (flag == "--gen-tokens") a.bench.gen_tokens = std::stoll(value);
    if (flag == "--types") {
      a.types.clear();
      std::stringstream in(value);
      for (std::string t; std::getline(in, t, ',');) a.types.push_back(t);
    }
  }
  if (Status s = ensure_models(a); !s.is_ok()) return fail(s);

  std::vector<Entry> entries;
  entries.push_back({"bf16", a.dir / "medium", nullptr, {}});
  for (const std::string& t : a.types)
    entries.push_back({t, a.dir / ("medium-" + t + ".gguf"), nullptr, {}});
  for (Entry& e : entries) {
    RuntimeOptions options;
    Result<backend::DeviceOptions> devices = [&]() -> Result<backend::DeviceOptions> {
      backend::DeviceOptions d;
      DMOE_ASSIGN_OR_RETURN(d.devices, backend::parse_device_list("cpu"));
      d.n_threads = a.threads;
      return d;
    }();
    if (!devices.is_ok()) return fail(devices.status());
    options.devices = *devices;
    Result<std::unique_ptr<ModelRuntime>> m = ModelRuntime::open(e.path, options);
    if (!m.is_ok()) return fail(m.status());
    e.model = std::move(m).value();
  }
  std::printf("models: %s, %d threads, CPU level %s, prompt %lld tokens, %lld decoded, %d rounds\n",
              a.dir.c_str(), a.threads,
              std::string(kernels::cpu_level_name(kernels::cpu_kernels().level)).c_str(),
              static_cast<long long>(a.bench.prompt_tokens),
              static_cast<long long>(a.bench.gen_tokens), a.rounds);
  cli::ModelBenchParams once = a.bench;
  once.repeats = 1;
  once.probe_bandwidth = true;
  for (int round = 0; round < a.rounds; ++round) {
    for (Entry& e : entries) {
      Result<cli::ModelBenchResult> r = cli::run_model_benchmark(*e.model, once);
      if (!r.is_ok()) return fail(r.status());
      if (round == 0 || r->prefill_tok_s > e.best.prefill_tok_s)
        e.best.prefill_tok_s = r->prefill_tok_s;
      if (round == 0 || r->decode_tok_s > e.best.decode_tok_s) {
        e.best.decode_tok_s = r->decode_tok_s;
        e.best.decode_membw = r->decode_membw;
      }
      e.best.bytes_per_token = r->bytes_per_token;
    }
  }
  const uint64_t weights_total = [&] {
    uint64_t t = 0;
    for (const Entry& e : entries) t += e.model->resident_weight_bytes();
    return t;
  }();
  (void)weights_total;
  for (Entry& e : entries) e.model.reset();  // the sustained probe wants the memory bus
  const double sustained =
      kernels::measure_sustained_read_bandwidth_bytes_per_s(int64_t{1} << 30, a.threads, 2.0);
  std::printf(
      "memory bandwidth (%d threads): burst beside each model's fastest decode round, "
      "sustained %.1f GB/s after all rounds\n\n",
      a.threads, sustained / 1e9);
  std::printf("%-8s %11s %10s %13s %11s %15s %22s %10s %10s\n", "model", "prefill/s", "decode/s",
              "bytes/token", "membw GB/s", "roofline tok/s", "of roofline (burst/sus)", "prefill x",
              "decode x");
  const Entry& base = entries[0];
  for (const Entry& e : entries) {
    const double roofline = e.best.decode_membw / e.best.bytes_per_token;
    const double roofline_sus = sustained / e.best.bytes_per_token;
    std::printf("%-8s %11.1f %10.1f %13.0f %11.1f %15.1f %13.0f%% / %3.0f%% %10.2f %10.2f\n",
                e.name.c_str(), e.best.prefill_tok_s, e.best.decode_tok_s, e.best.bytes_per_token,
                e.best.decode_membw / 1e9, roofline, 100.0 * e.best.roofline_frac(),
                100.0 * e.best.decode_tok_s / roofline_sus,
                e.best.prefill_tok_s / base.best.prefill_tok_s,
                e.best.decode_tok_s / base.best.decode_tok_s);
  }
  std::printf(
      "\ntargets (issue 14): decode >= 80%% of the roofline for q8_0 and q4_k_m; prefill >= 2x "
      "llama.cpp's on the same file (llama-bench -p 128 -t 2, measured by hand)\n");
  return 0;
}
