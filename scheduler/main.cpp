// `dancemoe-scheduler`: the global scheduler daemon (DESIGN.md §5-7).
// This entry point grows with the scheduler issue; for now it documents its
// interface and refuses to pretend to run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  CLI::App app{
      "dancemoe-scheduler: collects expert-activation statistics from every node, "
      "recomputes expert placement and orchestrates migrations."};
  app.set_version_flag("--version", std::string("dancemoe-scheduler 0.1.0"));
  std::string control = "tcp://*:5550";
  app.add_option("--control", control, "ZeroMQ control endpoint nodes connect to")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::fprintf(stderr,
               "dancemoe-scheduler: the daemon is not implemented in this build yet "
               "(see issue 4); nothing was started.\n");
  return 1;
}
