// `dancemoe make-model`: writes a random-weight checkpoint in the
// HuggingFace layout (see common/model/synthetic/synthetic_model.h) with its
// expert manifest. An existing, non-empty --out directory is refused unless
// --force, which first removes the model files it holds (weights, shards
// and their index, configs, tokenizer, manifest) so nothing stale stays.
#include <cstdio>
#include <filesystem>

#include "common/model/expert_manifest.h"
#include "common/model/synthetic/synthetic_configs.h"
#include "common/model/synthetic/synthetic_model.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/progress_bar.h"

namespace dancemoe::cli {
namespace {

struct Options {
  SyntheticModelSpec spec;
  std::string out;
  std::string tokenizer;
  std::string dtype = "bf16";
  std::vector<std::string> sets;  // KEY=JSON
  bool force = false;
};

bool is_model_file(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return p.extension() == ".safetensors" || name == "model.safetensors.index.json" ||
         name == "config.json" || name == "generation_config.json" || name == "tokenizer.json" ||
         name == "tokenizer_config.json" || name == ExpertManifest::kFileName;
}

// Refuses a non-empty --out without --force; with it, removes the model files.
Status prepare_out_dir(const Options& options) {
  std::error_code ec;
  const std::filesystem::path out(options.out);
  if (!std::filesystem::exists(out, ec)) return Status::ok();
  if (!std::filesystem::is_directory(out, ec)) {
    return invalid_argument("--out " + options.out + ": exists and is not a directory");
  }
  if (std::filesystem::is_empty(out, ec)) return Status::ok();
  if (!options.force) {
    return invalid_argument("--out " + options.out +
                            ": the directory exists and is not empty; refusing to overwrite it "
                            "(pass --force to replace the model in it)");
  }
  for (const auto& entry : std::filesystem::directory_iterator(out, ec)) {
    if (entry.is_regular_file(ec) && is_model_file(entry.path())) {
      std::filesystem::remove(entry.path(), ec);
      if (ec) return unavailable(entry.path().string() + ": cannot remove (" + ec.message() + ")");
    }
  }
  return Status::ok();
}

int run(const Options& options) {
  if (Status s = prepare_out_dir(options); !s.is_ok()) return report_failure("make-model", s);
  SyntheticModelSpec spec = options.spec;
  if (options.dtype == "bf16") {
    spec.dtype = DType::kBF16;
  } else if (options.dtype == "f16") {
    spec.dtype = DType::kF16;
  } else if (options.dtype == "f32") {
    spec.dtype = DType::kF32;
  } else {
    return report_failure("make-model", invalid_argument("--dtype must be bf16, f16 or f32"));
  }
  if (!options.tokenizer.empty()) spec.tokenizer_json = options.tokenizer;
  for (const std::string& set : options.sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      return report_failure("make-model", invalid_argument("--set '" + set +
                                                           "': expected KEY=JSON, e.g. "
                                                           "sliding_window=8"));
    }
    spec.config_overrides.emplace_back(set.substr(0, eq), set.substr(eq + 1));
  }
  ProgressBar bar("writing " + options.out);
  Status status = write_synthetic_model(
      spec, options.out, [&](uint64_t done, uint64_t total) { bar.update(done, total); });
  bar.finish();
  if (!status.is_ok()) return report_failure("make-model", status);
  std::printf("wrote %s %s model (seed %llu, random weights) to %s\n", spec.arch.c_str(),
              spec.preset.c_str(), static_cast<unsigned long long>(spec.seed), options.out.c_str());
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = root.add_subcommand(
      "make-model", "Write a random-weight MoE checkpoint in the HuggingFace layout");
  std::string archs;
  for (const std::string& a : synthetic_architectures()) archs += (archs.empty() ? "" : ", ") + a;
  cmd->add_option("--arch", options->spec.arch, "the architecture: " + archs)
      ->capture_default_str();
  cmd->add_option("--preset", options->spec.preset,
                  "tiny (unit tests), small (demo), medium (benchmarks: hidden 1024, 16 layers, "
                  "32 experts, top-8), olmoe-shape (OLMoE's 16 x 64 experts, top-8, narrow)")
      ->capture_default_str();
  cmd->add_option("--set", options->sets,
                  "KEY=JSON: replace a config.json field of the preset (repeatable), e.g. "
                  "--set sliding_window=8 --set 'rope_scaling={\"rope_type\":\"linear\","
                  "\"factor\":2.0}'; the tensors follow the resulting config");
  cmd->add_option("--out", options->out, "output directory")->required();
  cmd->add_option("--tokenizer", options->tokenizer,
                  "tokenizer.json to copy (default: a generated byte-level BPE tokenizer)");
  cmd->add_option("--seed", options->spec.seed, "random seed")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--dtype", options->dtype, "weight dtype: bf16, f16 or f32")
      ->capture_default_str();
  cmd->add_option("--shards", options->spec.n_shards, "number of safetensors shards")
      ->capture_default_str();
  cmd->add_flag("--tie-word-embeddings", options->spec.tie_word_embeddings,
                "share the embedding matrix with the LM head");
  cmd->add_flag("!--no-tokenizer", options->spec.write_tokenizer,
                "write no tokenizer files (weights and configs only)");
  cmd->add_flag("!--no-norm-topk-prob", options->spec.norm_topk_prob,
                "qwen3_moe: do not renormalise the top-k router weights");
  cmd->add_flag("--force", options->force,
                "replace the model in an existing, non-empty --out directory");
  cmd->callback([options, exit_code] { *exit_code = run(*options); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
