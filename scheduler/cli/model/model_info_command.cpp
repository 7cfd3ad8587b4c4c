// `dancemoe model-info --model PATH`: validates a model -- a HuggingFace
// directory or a GGUF file (every header and shape, no tensor data) -- and
// prints its identity, sizes and weight formats as JSON.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "common/model/checkpoint.h"
#include "kernels/quant_format.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

int run(const std::string& model_dir) {
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(model_dir);
  if (!ckpt.is_ok()) return report_failure("model-info", ckpt.status());
  const ModelConfig& c = (*ckpt)->config();
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  uint64_t expert_total = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const bool moe = c.layer_is_moe[static_cast<size_t>(l)];
    uint64_t bytes = moe ? (*ckpt)->expert_bytes(l, 0) : 0;
    if (moe) {
      for (int64_t e = 0; e < c.n_experts; ++e) expert_total += (*ckpt)->expert_bytes(l, e);
    }
    layers.push_back({{"moe", moe}, {"experts", moe ? c.n_experts : 0}, {"expert_bytes", bytes}});
  }
  // Matrices per weight format (experts counted once per expert).
  std::map<std::string, int64_t> formats;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (TensorRole role : {TensorRole::kQ, TensorRole::kK, TensorRole::kV, TensorRole::kO}) {
      ++formats[std::string(kernels::weight_type_name((*ckpt)->tensor(role, l).type))];
    }
    if (!c.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < c.n_experts; ++e) {
      for (TensorRole role :
           {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
        ++formats[std::string(kernels::weight_type_name((*ckpt)->tensor(role, l, e).type))];
      }
    }
  }
  nlohmann::ordered_json out = {
      {"model_id", (*ckpt)->model_id()},
      {"format", (*ckpt)->is_split() ? ((*ckpt)->has_dense_weights() ? "split" : "headers")
                                     : ((*ckpt)->is_gguf() ? "gguf" : "safetensors")},
      {"expert_type", std::string(kernels::weight_type_name((*ckpt)->expert_type()))},
      {"matrix_types", formats},
      {"architecture", c.hf_architecture},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"layers", layers},
      {"experts_per_token", c.n_experts_per_token},
      {"dense_bytes", (*ckpt)->dense_bytes()},
      {"expert_bytes_total", expert_total},
      {"total_bytes", (*ckpt)->total_bytes()},
      {"files", (*ckpt)->files().size()},
      {"tokenizer", (*ckpt)->tokenizer_source()}};
  if ((*ckpt)->is_split()) {  // a partial checkpoint: the experts this copy has
    int64_t on_disk = 0;
    for (int32_t l = 0; l < c.n_layers; ++l) {
      if (!c.layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int32_t e = 0; e < c.n_experts; ++e) on_disk += (*ckpt)->has_expert_weights({l, e});
    }
    out["expert_files"] = on_disk;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto model_dir = std::make_shared<std::string>();
  CLI::App* cmd = root.add_subcommand(
      "model-info",
      "Validate a model (directory or GGUF) and print its id, sizes and formats as JSON");
  cmd->add_option("--model", *model_dir,
                  "model: a HuggingFace directory, or a .gguf file (or a directory holding one)")
      ->required();
  cmd->callback([model_dir, exit_code] { *exit_code = run(*model_dir); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
