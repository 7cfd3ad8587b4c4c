// `dancemoe logits --model DIR --ids 3,17,250 --out FILE.npy`: one forward
// pass over the ids; writes the logits of every position as float32
// [n_ids, vocab_size]. Needs no tokenizer files.
#include <cstdio>

#include "common/assembly/model_runtime.h"
#include "common/tensor/npy.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/model/device_flags.h"

namespace dancemoe::cli {
namespace {

struct Options {
  std::string model;
  std::string ids;
  std::string out;
  std::string precision;  // default: f32 on the CPU, bf16 on a GPU
  DeviceFlags device;
};

int run(const Options& options) {
  Result<std::vector<int32_t>> ids = parse_id_list(options.ids);
  if (!ids.is_ok()) return report_failure("logits", ids.status());
  Result<backend::DeviceOptions> devices = device_options(options.device);
  if (!devices.is_ok()) return report_failure("logits", devices.status());
  const std::string precision_text =
      !options.precision.empty() ? options.precision : (devices->first_cuda() < 0 ? "f32" : "bf16");
  std::optional<ComputePrecision> precision = parse_precision(precision_text);
  if (!precision)
    return report_failure("logits", invalid_argument("--precision must be f32 or bf16"));
  RuntimeOptions model_options;
  model_options.precision = *precision;
  if (Status s = apply_device_flags(options.device, &model_options); !s.is_ok()) {
    return report_failure("logits", s);
  }
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(options.model, model_options);
  if (!model.is_ok()) return report_failure("logits", model.status());
  Transformer& transformer = (*model)->transformer();
  Result<KvCache> cache = transformer.new_cache(static_cast<int64_t>(ids->size()));
  if (!cache.is_ok()) return report_failure("logits", cache.status());
  std::vector<float> logits;
  Status status = transformer.forward(*ids, *cache, LogitsMode::kAll, &logits);
  if (!status.is_ok()) return report_failure("logits", status);
  const int64_t vocab = transformer.config().vocab_size;
  status = write_npy_f32(options.out, logits, {static_cast<int64_t>(ids->size()), vocab});
  if (!status.is_ok()) return report_failure("logits", status);
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = root.add_subcommand(
      "logits", "Write the logits of every position of one forward pass as a .npy file");
  cmd->add_option("--model", options->model,
                  "model: a HuggingFace directory, or a .gguf file (or a directory holding one)")
      ->required();
  cmd->add_option("--ids", options->ids, "comma-separated token ids, e.g. 3,17,250")->required();
  cmd->add_option("--out", options->out, "output .npy file: float32 [n_ids, vocab_size]")
      ->required();
  cmd->add_option("--precision", options->precision,
                  "f32 (reference) or bf16 (fast) activations (default: f32 on the CPU, bf16 on a "
                  "GPU)");
  add_device_flags(cmd, &options->device);
  cmd->callback([options, exit_code] { *exit_code = run(*options); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
