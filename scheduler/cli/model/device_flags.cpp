#include "scheduler/cli/model/device_flags.h"

#include <CLI/CLI.hpp>

#include "kernels/quant_format.h"

namespace dancemoe::cli {

void add_device_flags(CLI::App* cmd, DeviceFlags* flags) {
  cmd->add_option("--devices", flags->devices,
                  "where the model runs: a comma-separated list of cpu, cpu:N (a NUMA node or a "
                  "slice of the cores) and cuda:N; the dense part goes to the first GPU")
      ->capture_default_str();
  cmd->add_option("--device-memory", flags->device_memory,
                  "expert memory of one device, DEV=BYTES (repeatable), e.g. cuda:0=20G "
                  "(default: what is free after the dense part, KV cache and workspace)");
  cmd->add_option("--threads", flags->threads, "threads of the cpu device (0: all cores)")
      ->capture_default_str();
  cmd->add_option("--max-batch-tokens", flags->max_batch_tokens,
                  "GPU: longest batch per forward (longer prompts are split)")
      ->capture_default_str();
  cmd->add_option("--expert-type", flags->expert_type,
                  "hold the experts in this format, quantizing them at load: q8_0, q4_0, q4_K, "
                  "q5_K, q6_K, mxfp4, bf16, f16 or f32 (default: as stored)");
  cmd->add_flag("--copy-weights", flags->copy_weights,
                "copy a GGUF file's weights into memory instead of computing on its mapping");
  cmd->add_flag(
      "--rows-layout", flags->rows_layout,
      "keep Q4_K / Q5_K / Q6_K / Q8_0 weights in the file's rows instead of copies interleaved "
      "for this CPU's faster kernels (kernels/interleave.h): e.g. an A/B of that choice");
  cmd->add_option("--kv-type", flags->kv_type,
                  "what the KV cache stores on the CPU: f32, or bf16 (half the memory, keys and "
                  "values rounded to bf16)")
      ->capture_default_str();
}

Status apply_device_flags(const DeviceFlags& flags, RuntimeOptions* options) {
  DMOE_ASSIGN_OR_RETURN(options->devices, device_options(flags));
  options->copy_mapped_weights = flags.copy_weights;
  options->interleave_k = !flags.rows_layout;
  if (!flags.expert_type.empty()) {
    kernels::WeightType type;
    if (!kernels::parse_weight_type(flags.expert_type, &type)) {
      return invalid_argument("--expert-type '" + flags.expert_type +
                              "': expected q8_0, q4_0, q4_K, q5_K, q6_K, mxfp4, bf16, f16 or f32");
    }
    options->expert_type = type;
  }
  const std::optional<KvElement> kv = parse_kv_element(flags.kv_type);
  if (!kv) return invalid_argument("--kv-type '" + flags.kv_type + "': expected f32 or bf16");
  options->kv_element = *kv;
  return Status::ok();
}

Result<backend::DeviceOptions> device_options(const DeviceFlags& flags) {
  backend::DeviceOptions options;
  DMOE_ASSIGN_OR_RETURN(options.devices, backend::parse_device_list(flags.devices));
  for (const std::string& item : flags.device_memory) {
    DMOE_RETURN_IF_ERROR(backend::parse_device_memory(item, &options));
  }
  if (flags.threads < 0) {
    return invalid_argument("--threads " + std::to_string(flags.threads) +
                            ": expected 0 (all cores) or a positive count");
  }
  options.n_threads = flags.threads;
  if (flags.max_batch_tokens < 1)
    return invalid_argument("--max-batch-tokens " + std::to_string(flags.max_batch_tokens) +
                            ": must be at least 1");
  options.max_batch_tokens = flags.max_batch_tokens;
  return options;
}

}  // namespace dancemoe::cli
