// `dancemoe-node`: the node agent run on every workstation (DESIGN.md §2-3).
// This entry point grows with the node issue; for now it documents its
// interface and refuses to pretend to run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  CLI::App app{
      "dancemoe-node: holds the dense model and a subset of the experts, serves prompts "
      "and serves its experts to peers."};
  app.set_version_flag("--version", std::string("dancemoe-node 0.1.0"));
  std::string model_dir;
  app.add_option("--model", model_dir, "HuggingFace-layout model directory");
  CLI11_PARSE(app, argc, argv);
  std::fprintf(stderr,
               "dancemoe-node: the agent is not implemented in this build yet (see issue 5); "
               "use `dancemoe generate --model DIR` for single-node generation.\n");
  return 1;
}
