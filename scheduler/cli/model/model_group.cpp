#include "scheduler/cli/model/model_group.h"

namespace dancemoe::cli {

CLI::App* model_group(CLI::App& root) {
  const std::vector<CLI::App*> found =
      root.get_subcommands([](CLI::App* app) { return app->get_name() == "model"; });
  if (!found.empty()) return found.front();
  CLI::App* group = root.add_subcommand("model", "Model directory tools");
  group->require_subcommand(1);
  return group;
}

}  // namespace dancemoe::cli
