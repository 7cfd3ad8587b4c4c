// `dancemoe quantize --model DIR --out FILE.gguf --type q8_0|q4_0|q4_k_m|...`:
// writes a model directory's weights as one GGUF file in a quantization
// mixture (common/model/gguf/gguf_recipe.h) that llama.cpp-compatible
// readers accept, and prints what it wrote as JSON.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/model/checkpoint.h"
#include "common/model/gguf/gguf_quantize.h"
#include "kernels/quant_format.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/progress_bar.h"

namespace dancemoe::cli {
namespace {

struct Args {
  std::string model_dir;
  std::string out;
  std::string type = "q8_0";
  int threads = 0;
};

int run(const Args& args) {
  Result<gguf::Mixture> mixture = gguf::parse_mixture(args.type);
  if (!mixture.is_ok()) return report_failure("quantize", mixture.status());
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(args.model_dir);
  if (!ckpt.is_ok()) return report_failure("quantize", ckpt.status());
  gguf::QuantizeOptions options;
  options.mixture = *mixture;
  options.n_threads = args.threads > 0
                          ? args.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ProgressBar bar("quantize");
  options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
  Result<gguf::QuantizeSummary> summary = gguf::quantize_to_gguf(**ckpt, args.out, options);
  bar.finish();
  if (!summary.is_ok()) return report_failure("quantize", summary.status());
  nlohmann::ordered_json types = nlohmann::ordered_json::object();
  for (int t = 0; t < kernels::kWeightTypeCount; ++t) {
    if (summary->n_by_type[t] > 0) {
      types[std::string(kernels::weight_type_name(static_cast<kernels::WeightType>(t)))] =
          summary->n_by_type[t];
    }
  }
  nlohmann::ordered_json out = {
      {"out", args.out},
      {"type", std::string(gguf::mixture_name(*mixture))},
      {"tensors", summary->n_tensors},
      {"tensor_types", types},
      {"file_bytes", summary->file_bytes},
      {"source_bytes", summary->source_bytes},
      {"bits_per_weight_vs_bf16", 16.0 * static_cast<double>(summary->file_bytes) /
                                      static_cast<double>(summary->source_bytes)}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = root.add_subcommand(
      "quantize", "Write a model's weights as a GGUF file in a quantization mixture");
  cmd->add_option("--model", args->model_dir,
                  "model: a HuggingFace directory, or a GGUF file to re-quantize")
      ->required();
  cmd->add_option("--out", args->out, "the GGUF file to write")->required();
  cmd->add_option(
      "--type", args->type,
      "q8_0, q4_0, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, f16, bf16 or f32 (default q8_0)");
  cmd->add_option("--threads", args->threads, "threads (default: all cores)");
  cmd->callback([args, exit_code] { *exit_code = run(*args); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
