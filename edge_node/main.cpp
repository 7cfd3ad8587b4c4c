// `dancemoe-node`: the node agent run on every workstation (DESIGN.md §2-3):
// holds the dense model and a subset of the experts, answers prompts over
// HTTP, serves its experts to peers, reports activations to the scheduler
// and executes migrations. See edge_node/agent/node_agent.h for the wiring
// and docs/node/README.md for running a cluster.
//
// Signals: SIGTERM / SIGINT stop cleanly; SIGHUP reloads the --placement
// file (standalone mode). Exit codes: 0 stopped, 1 could not start (the
// message names the flag or file), 2 refused by the scheduler. --doctor
// checks the set-up instead of starting (node_doctor.h).
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/runtime/doctor_report.h"
#include "edge_node/agent/node_agent.h"
#include "edge_node/agent/node_doctor.h"
#include "edge_node/agent/node_options.h"

int main(int argc, char** argv) {
  using namespace dancemoe;
  CLI::App app{
      "dancemoe-node: holds the dense model and a subset of the experts, serves prompts "
      "and serves its experts to peers."};
  app.set_version_flag("--version", std::string("dancemoe-node 0.1.0"));
  node::NodeOptions options;
  std::shared_ptr<node::RawNodeFlags> raw = node::add_node_flags(app, &options);
  bool doctor = false;
  app.add_flag("--doctor", doctor,
               "check this machine for a node with these flags (model, devices, ports, keys, "
               "scheduler, clock), print one line per check and exit: 0 nothing failed, 1 a "
               "check failed; loads no weights");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a missing or malformed flag cannot start (1).
    return app.exit(e) == 0 ? 0 : 1;
  }
  if (Status s = node::finish_node_flags(*raw, &options); !s.is_ok()) {
    if (doctor) {
      DoctorReport flags;
      flags.fail("flags", s.message(), "dancemoe-node --help lists the flags and their forms");
      std::fputs(flags.format().c_str(), stdout);
    } else {
      std::fprintf(stderr, "dancemoe-node: %s\n", s.message().c_str());
    }
    return 1;
  }
  if (doctor) {
    spdlog::set_level(spdlog::level::err);
    const DoctorReport report = node::check_node(options);
    std::fputs(report.format().c_str(), stdout);
    return report.failed() ? 1 : 0;
  }
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [" + options.node_id + "] [%l] %v");

  // Every thread started from here on inherits the blocked set; the main
  // thread takes the signals synchronously.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  Result<std::unique_ptr<node::NodeAgent>> agent = node::NodeAgent::start(options);
  if (!agent.is_ok()) {
    std::fprintf(stderr, "dancemoe-node: %s\n", agent.status().to_string().c_str());
    return 1;
  }
  int exit_code = 0;
  while (true) {
    timespec wait{0, 100'000'000};
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("signal {}: stopping", sig);
      break;
    }
    if (sig == SIGHUP) {
      Status s = (*agent)->reload_placement();
      if (!s.is_ok()) spdlog::error("reload: {}", s.to_string());
    }
    (*agent)->poll();
    if ((*agent)->refused()) {
      exit_code = 2;
      break;
    }
  }
  (*agent)->stop();
  agent->reset();
  return exit_code;
}
