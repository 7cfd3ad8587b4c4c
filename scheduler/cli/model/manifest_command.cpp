// `dancemoe model manifest`: writes a model directory's expert manifest
// (common/model/expert_manifest.h) -- the SHA-256 of every routed expert's
// weights, which nodes check each expert against when they load it from
// their files or receive it from a peer.
//
//   dancemoe model manifest --model DIR
//       Reads every expert once and writes DIR/dancemoe-manifest.json
//       (replacing one). The manifest is part of the model id, so copy the
//       same file to every node's copy of the model; prints the new id.
#include <cstdio>
#include <string>

#include "common/model/checkpoint.h"
#include "common/model/expert_manifest.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/model/model_group.h"
#include "scheduler/cli/progress_bar.h"

namespace dancemoe::cli {
namespace {

int run_manifest(const std::string& model) {
  Result<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::open(model);
  if (!checkpoint.is_ok()) return report_failure("model manifest", checkpoint.status());
  ProgressBar bar("hashing the experts of " + model);
  Result<ExpertManifest> manifest = ExpertManifest::write(
      **checkpoint, [&](uint64_t done, uint64_t total) { bar.update(done, total); });
  bar.finish();
  if (!manifest.is_ok()) return report_failure("model manifest", manifest.status());
  Result<std::unique_ptr<Checkpoint>> reopened = Checkpoint::open(model);
  if (!reopened.is_ok()) return report_failure("model manifest", reopened.status());
  std::printf("wrote %s/%s: %zu experts; model id %s (copy the file to every node's model)\n",
              model.c_str(), ExpertManifest::kFileName, manifest->size(),
              (*reopened)->model_id().c_str());
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  CLI::App* group = model_group(root);
  auto model = std::make_shared<std::string>();
  CLI::App* manifest = group->add_subcommand(
      "manifest", "Write the per-expert SHA-256 manifest nodes verify weights against");
  manifest->add_option("--model", *model, "HuggingFace-layout model directory")->required();
  manifest->callback([model, exit_code] { *exit_code = run_manifest(*model); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
