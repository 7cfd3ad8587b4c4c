// `dancemoe`: the client CLI. Each sub-command lives in its own
// *_command.cpp and registers itself (command_registry.h).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "scheduler/cli/command_registry.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dancemoe: client for a DanceMoE cluster and model tools.\n"
      "Run `dancemoe <command> --help` for a command's options."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dancemoe 0.1.0"));
  // Library logs go to stderr, warnings and up: stdout is the commands'
  // output (JSON, tables), which scripts parse.
  spdlog::set_default_logger(spdlog::stderr_color_mt("dancemoe"));
  spdlog::set_level(spdlog::level::warn);
  int exit_code = 0;
  dancemoe::cli::add_registered_commands(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
