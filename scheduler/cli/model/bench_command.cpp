// `dancemoe bench --model DIR [--devices LIST] [--threads N] [--prompt-tokens 128]
// [--gen-tokens 64] [device flags, e.g. --rows-layout] --json`: single-node prefill and decode
// speed, the weight bytes read per decoded token, a measured memory bandwidth and the fraction of
// the memory roofline (bandwidth / bytes per token) that decode reaches. membw_gb_s is the burst
// figure (fastest 16 MiB read) measured beside the fastest decode run (model_benchmark.h: the
// bandwidth of a shared host changes from second to second), decode_runs every run with its own
// probe and fraction; the sustained figure (median whole pass over 1 GiB, after the runs) is
// printed beside it with its own fraction.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "kernels/cpu/memory_bandwidth.h"
#include "kernels/quant_format.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/model/device_flags.h"
#include "scheduler/cli/model/model_benchmark.h"

namespace dancemoe::cli {
namespace {

struct Options {
  std::string model;
  ModelBenchParams bench;
  std::string precision = "bf16";
  bool json = false;
  DeviceFlags device;
};

int run(const Options& o) {
  std::optional<ComputePrecision> precision = parse_precision(o.precision);
  if (!precision)
    return report_failure("bench", invalid_argument("--precision must be f32 or bf16"));
  Result<backend::DeviceOptions> devices = device_options(o.device);
  if (!devices.is_ok()) return report_failure("bench", devices.status());
  RuntimeOptions options;
  options.precision = *precision;
  if (Status s = apply_device_flags(o.device, &options); !s.is_ok()) {
    return report_failure("bench", s);
  }
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(o.model, options);
  if (!model.is_ok()) return report_failure("bench", model.status());
  ModelBenchParams bench = o.bench;
  bench.probe_bandwidth = devices->first_cuda() < 0;
  Result<ModelBenchResult> r = run_model_benchmark(**model, bench);
  if (!r.is_ok()) return report_failure("bench", r.status());
  if (devices->first_cuda() >= 0) {
    // A GPU run: the CPU memory probe and roofline do not apply
    // (tests/bench/bench_cuda_model.cpp relates decode to the GPU's bandwidth).
    nlohmann::ordered_json out = {{"model", o.model},
                                  {"devices", devices->text()},
                                  {"backend", (*model)->description()},
                                  {"precision", precision_name(*precision)},
                                  {"prompt_tokens", o.bench.prompt_tokens},
                                  {"gen_tokens", o.bench.gen_tokens},
                                  {"prefill_tok_s", r->prefill_tok_s},
                                  {"decode_tok_s", r->decode_tok_s},
                                  {"bytes_per_token", r->bytes_per_token},
                                  {"weight_bytes", (*model)->resident_weight_bytes()}};
    std::printf("%s\n", out.dump(o.json ? -1 : 2).c_str());
    return 0;
  }
  const std::string format = (*model)->checkpoint().is_gguf() ? "gguf" : "safetensors";
  const std::string expert_type(kernels::weight_type_name((*model)->experts().held_type()));
  // The layout the experts are computed in (kernels/interleave.h): that of
  // a resident expert's gate matrix.
  const char* expert_layout = "rows";
  if (const std::vector<ExpertRef> keys = (*model)->experts().resident_keys(); !keys.empty()) {
    if ((*model)->experts().get(keys.front())->gate.layout ==
        kernels::WeightLayout::kInterleaved16) {
      expert_layout = "interleaved";
    }
  }
  const uint64_t peak_rss = r->peak_rss_bytes;
  const uint64_t weight_bytes = (*model)->resident_weight_bytes();
  const int n_threads = (*model)->forward_pool().size();
  model->reset();  // free the weights before the 1 GiB sustained probe
  const double membw_sustained =
      kernels::measure_sustained_read_bandwidth_bytes_per_s(int64_t{1} << 30, n_threads, 2.0);
  const double membw = r->decode_membw;
  const double roofline_tok_s = membw / r->bytes_per_token;
  nlohmann::json runs = nlohmann::json::array();
  for (const DecodeRun& run : r->decode_runs) {
    runs.push_back({{"tok_s", run.tok_s},
                    {"membw_gb_s", run.membw_bytes_per_s / 1e9},
                    {"roofline_frac", run.tok_s * r->bytes_per_token / run.membw_bytes_per_s}});
  }
  nlohmann::ordered_json out = {
      {"model", o.model},
      {"format", format},
      {"expert_type", expert_type},
      {"expert_layout", expert_layout},
      {"threads", n_threads},
      {"precision", precision_name(*precision)},
      {"cpu_level", kernels::cpu_level_name(kernels::cpu_kernels().level)},
      {"prompt_tokens", o.bench.prompt_tokens},
      {"gen_tokens", o.bench.gen_tokens},
      {"prefill_tok_s", r->prefill_tok_s},
      {"decode_tok_s", r->decode_tok_s},
      {"bytes_per_token", r->bytes_per_token},
      {"membw_gb_s", membw / 1e9},
      {"roofline_tok_s", roofline_tok_s},
      {"roofline_frac", r->roofline_frac()},
      {"decode_runs", runs},
      {"membw_sustained_gb_s", membw_sustained / 1e9},
      {"roofline_frac_sustained", r->decode_tok_s * r->bytes_per_token / membw_sustained},
      {"weight_bytes", weight_bytes},
      {"peak_rss_bytes", peak_rss},
      {"peak_rss_over_weights", static_cast<double>(peak_rss) / static_cast<double>(weight_bytes)}};
  if (o.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s\n", out.dump(2).c_str());
  }
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      root.add_subcommand("bench", "Measure prefill/decode speed against the memory roofline");
  cmd->add_option("--model", o->model,
                  "model: a HuggingFace directory, or a .gguf file (or a directory holding one)")
      ->required();
  cmd->add_option("--prompt-tokens", o->bench.prompt_tokens, "prefill length")
      ->capture_default_str();
  cmd->add_option("--gen-tokens", o->bench.gen_tokens, "decoded tokens")->capture_default_str();
  cmd->add_option("--repeats", o->bench.repeats, "best of this many runs")->capture_default_str();
  cmd->add_option("--precision", o->precision, "bf16 or f32 activations")->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object on one line");
  add_device_flags(cmd, &o->device);
  cmd->callback([o, exit_code] { *exit_code = run(*o); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
