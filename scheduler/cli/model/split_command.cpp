// `dancemoe model split` and `dancemoe model headers`: partial checkpoints
// (common/model/split/split_writer.h, docs/partial-checkpoints.md).
//
//   dancemoe model split --model MODEL --out DIR [--force]
//       DIR gets the dense part (dense.bin), one file per expert under
//       DIR/experts/, the index with every expert's SHA-256 (GGUF blocks
//       included), config and tokenizer. Copy DIR to each node and delete
//       the expert files a node need not keep: nodes start with what they
//       have and fetch the rest from peers.
//   dancemoe model headers --model MODEL --out DIR [--force]
//       The same without any weights (kilobytes): for the scheduler, and for
//       a `--role experts` node that fetches all its experts.
#include <cstdio>
#include <memory>
#include <string>

#include "common/base/byte_size.h"
#include "common/model/checkpoint.h"
#include "common/model/split/split_writer.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/model/model_group.h"
#include "scheduler/cli/progress_bar.h"

namespace dancemoe::cli {
namespace {

struct SplitFlags {
  std::string model;
  std::string out;
  bool force = false;
};

int run_split(const SplitFlags& flags, bool headers_only) {
  const std::string command = headers_only ? "model headers" : "model split";
  Result<std::unique_ptr<Checkpoint>> source = Checkpoint::open(flags.model);
  if (!source.is_ok()) return report_failure(command, source.status());
  ProgressBar bar((headers_only ? "hashing the experts of " : "splitting ") + flags.model);
  SplitOptions options;
  options.headers_only = headers_only;
  options.force = flags.force;
  options.progress = [&](uint64_t done, uint64_t total) { bar.update(done, total); };
  Result<SplitSummary> summary = write_split(**source, flags.out, options);
  bar.finish();
  if (!summary.is_ok()) return report_failure(command, summary.status());
  if (headers_only) {
    std::printf("wrote %s: header-only copy of model %s (no weights)\n", flags.out.c_str(),
                summary->model_id.c_str());
  } else {
    std::printf("wrote %s: dense part %s, %lld expert files (%s)%s; model id %s\n",
                flags.out.c_str(), format_bytes(summary->dense_bytes).c_str(),
                static_cast<long long>(summary->n_expert_files),
                format_bytes(summary->expert_bytes).c_str(),
                summary->n_experts_absent > 0 ? (", " + std::to_string(summary->n_experts_absent) +
                                                 " experts not on the source's disk")
                                                    .c_str()
                                              : "",
                summary->model_id.c_str());
  }
  return 0;
}

void add(CLI::App* group, const char* name, const char* help, bool headers_only, int* exit_code) {
  auto flags = std::make_shared<SplitFlags>();
  CLI::App* cmd = group->add_subcommand(name, help);
  cmd->add_option("--model", flags->model,
                  "the source: a HuggingFace directory, a GGUF model or a split checkpoint")
      ->required();
  cmd->add_option("--out", flags->out, "the directory to write (new or empty)")->required();
  cmd->add_flag("--force", flags->force, "replace the split checkpoint already in --out");
  cmd->callback([flags, headers_only, exit_code] { *exit_code = run_split(*flags, headers_only); });
}

void setup(CLI::App& root, int* exit_code) {
  CLI::App* group = model_group(root);
  add(group, "split",
      "Write a partial checkpoint: the dense part plus one file per expert, with their digests",
      false, exit_code);
  add(group, "headers",
      "Write a header-only copy of a model (no weights): enough for the scheduler", true,
      exit_code);
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
