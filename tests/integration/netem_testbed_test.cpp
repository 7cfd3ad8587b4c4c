// The network testbed (deploy/netem/netem.sh): three hosts in network
// namespaces on this machine with tc netem shaping. Needs root and the
// kernel's sch_netem; where they are missing the test says so and skips.
// All traffic stays on this machine (10.77.0.0/24 inside the namespaces).
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace dancemoe::testing {

TEST_CASE("netem testbed: three shaped hosts, a round trip sees both hosts' delay") {
  const std::string script = (source_dir() / "deploy" / "netem" / "netem.sh").string();
  const ProcessResult check = run_process({"/bin/bash", script, "check"});
  if (check.exit_code != 0) {
    MESSAGE("SKIPPED: the network testbed cannot run here: " << check.err);
    return;
  }
  const ProcessResult up = run_process(
      {"/bin/bash", script, "up", "--nodes", "3", "--delay", "5ms", "--rate", "100mbit"});
  INFO(up.err);
  REQUIRE(up.exit_code == 0);
  const ProcessResult ping =
      run_process({"/bin/bash", script, "exec", "0", "--", "ping", "-c", "3", "-q", "10.77.0.2"},
                  std::chrono::seconds(20));
  const ProcessResult down = run_process({"/bin/bash", script, "down"});
  CHECK(down.exit_code == 0);
  INFO(ping.out << ping.err);
  REQUIRE(ping.exit_code == 0);
  // rtt min/avg/max/mdev = 10.1/10.2/...: 5 ms on each host's egress.
  std::smatch m;
  REQUIRE(std::regex_search(ping.out, m, std::regex(R"(= ([0-9.]+)/([0-9.]+)/)")));
  const double avg_ms = std::stod(m[2].str());
  MESSAGE("round trip between two testbed hosts: " << avg_ms << " ms (2 x 5 ms netem delay)");
  CHECK(avg_ms >= 9.5);
  CHECK(avg_ms < 50);
}

}  // namespace dancemoe::testing
