// The curl examples of the README and the node's documentation, run as
// written against a real node (only the host:port changes): each must
// succeed with a 2xx answer. An operator copies them first; a wrong one
// (a missing Content-Type header, a field the API refuses) costs an hour.
// Also: a form body too large for the form limit gets a 413 that says why.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "tests/integration/openai_node.h"
#include "tests/support/process.h"

namespace dancemoe::testing {
namespace {

// Every `curl ...` command in the file's code blocks, continuation lines
// joined, trailing comments dropped.
std::vector<std::string> curl_examples(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::vector<std::string> commands;
  std::string line, pending;
  bool in_code = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_code = !in_code;
      continue;
    }
    if (!in_code) continue;
    if (pending.empty()) {
      const size_t at = line.find("curl ");
      if (at == std::string::npos || line.find_first_not_of(' ') != at) continue;
    }
    const size_t comment = line.find("  #");
    if (comment != std::string::npos) line = line.substr(0, comment);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    commands.push_back(pending + line);
    pending.clear();
  }
  return commands;
}

TEST_CASE("docs: every curl example of the README and the node guide works as written") {
  OpenAiTestNode n;
  const std::regex host(R"(localhost:[0-9]+)");
  size_t ran = 0;
  for (const char* doc : {"README.md", "docs/node/README.md"}) {
    for (const std::string& example : curl_examples(std::filesystem::path(DMOE_SOURCE_DIR) / doc)) {
      const std::string command =
          std::regex_replace(example, host, n.http()) + " --fail-with-body --max-time 60";
      CAPTURE(doc);
      CAPTURE(command);
      const ProcessResult r = run_process({"/bin/sh", "-c", command}, std::chrono::seconds(90));
      INFO("stdout: " << r.out.substr(0, 2000) << "\nstderr: " << r.err);
      CHECK(r.exit_code == 0);
      CHECK_FALSE(r.out.empty());
      ++ran;
    }
  }
  CHECK(ran >= 5);
}

TEST_CASE("docs: a form body over the form limit is a 413 that says to send JSON") {
  OpenAiTestNode n;
  const std::string prompt(20000, 'a');
  httplib::Client client("http://" + n.http());
  auto res = client.Post("/v1/completions", "{\"prompt\": \"" + prompt + "\"}",
                         "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 413);
  CHECK(res->body.find("Content-Type: application/json") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::testing
