#include "scheduler/cli/model/device_flags.h"

#include <CLI/CLI.hpp>

#include "common/base/byte_size.h"

namespace dancemoe::cli {

void add_device_flags(CLI::App* cmd, DeviceFlags* flags) {
  cmd->add_option("--device", flags->device,
                  "where the model runs: cpu, cuda (= cuda:0), cuda:N or cuda:N,M (several GPUs)")
      ->capture_default_str();
  cmd->add_option("--device-budget", flags->budget,
                  "GPU memory each device may use, e.g. 20G or 20G,16G (default: all free)");
  cmd->add_option("--dense-device", flags->dense_device,
                  "GPU ordinal for the dense part and KV cache (default: the first listed)");
  cmd->add_option("--max-batch-tokens", flags->max_batch_tokens,
                  "GPU: longest batch per forward (longer prompts are split)")
      ->capture_default_str();
}

Result<backend::DeviceOptions> device_options(const DeviceFlags& flags) {
  backend::DeviceOptions options;
  DMOE_RETURN_IF_ERROR(backend::parse_device(flags.device).status());
  options.device = flags.device;
  if (!flags.budget.empty()) {
    DMOE_ASSIGN_OR_RETURN(options.budget_bytes,
                          parse_byte_size_list(flags.budget, "--device-budget"));
  }
  if (flags.dense_device < -1) {
    return invalid_argument("--dense-device " + std::to_string(flags.dense_device) +
                            ": expected a GPU ordinal (0, 1, ...)");
  }
  if (flags.dense_device >= 0) options.dense_device = flags.dense_device;
  if (flags.max_batch_tokens < 1)
    return invalid_argument("--max-batch-tokens " + std::to_string(flags.max_batch_tokens) +
                            ": must be at least 1");
  options.max_batch_tokens = flags.max_batch_tokens;
  return options;
}

}  // namespace dancemoe::cli
