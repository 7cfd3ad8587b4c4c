// A cluster on GGUF files (issue 14), real processes on 127.0.0.1: `dancemoe
// quantize` writes a Q8_0 GGUF of the tiny model; `dancemoe model-info`
// reads it; the scheduler and three nodes run from it, the cold-start
// placement reaches every node, prompts are served (experts remote as well
// as local). Precision: a node started from the bf16 files with
// --expert-type q8_0 holds the same precision and joins; one holding bf16 is
// refused with a message naming both precisions, until the scheduler lists
// bf16 in expert_types.
#include <doctest/doctest.h>

#include <random>

#include "tests/integration/cli_path.h"
#include "tests/integration/node_cluster.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/process.h"
#include "tests/support/scheduler_process.h"

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;

// Flags of node `name` attached to `scheduler`, with its keys.

struct GgufModels {
  GgufModels() : work("gguf-cluster") {
    hf = work.path() / "tiny";
    write_model(SyntheticModelSpec{}, hf);
    gguf = work.path() / "tiny-q8_0.gguf";
    const auto q = run_process({kCli, "quantize", "--model", hf.string(), "--out", gguf.string(),
                                "--type", "q8_0", "--threads", "1"});
    INFO(q.err);
    REQUIRE(q.exit_code == 0);
  }
  TempDir work;
  std::filesystem::path hf;
  std::filesystem::path gguf;
};

TEST_CASE("gguf cluster: model-info reads a quantized file, and the same model id as its source") {
  GgufModels m;
  const auto info = run_process({kCli, "model-info", "--model", m.gguf.string()});
  INFO(info.err);
  REQUIRE(info.exit_code == 0);
  const json j = json::parse(info.out);
  CHECK(j["format"] == "gguf");
  CHECK(j["expert_type"] == "q8_0");
  CHECK(j["matrix_types"]["q8_0"].get<int64_t>() > 0);
  const auto src = run_process({kCli, "model-info", "--model", m.hf.string()});
  REQUIRE(src.exit_code == 0);
  CHECK(json::parse(src.out)["model_id"] == j["model_id"]);
  CHECK(json::parse(src.out)["expert_bytes_total"].get<uint64_t>() >
        j["expert_bytes_total"].get<uint64_t>());
  // Bad input: a truncated copy is refused naming the file.
  const auto cut = m.work.path() / "cut.gguf";
  std::filesystem::copy_file(m.gguf, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(m.gguf) / 2);
  const auto bad = run_process({kCli, "model-info", "--model", cut.string()});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find(cut.string()) != std::string::npos);
}

TEST_CASE("gguf cluster: a scheduler and three nodes on one GGUF file serve prompts") {
  GgufModels m;
  SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, m.work.path(), model_scheduler_flags(m.gguf));
  scheduler.start();
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  for (const std::string id : {"a", "b", "c"}) {
    // Room for about half the experts each: some calls go to peers.
    nodes[id] = std::make_unique<NodeProcess>(
        m.work.path(), id,
        node_args(m.gguf, free_tcp_port(),
                  attached_args(scheduler, id, {"--expert-memory", "80K"})));
  }
  for (auto& [id, node] : nodes) REQUIRE(node->wait_ready());
  REQUIRE(eventually(
      [&] {
        for (auto& [id, node] : nodes) {
          if (node->stats()["placement_version"].get<uint64_t>() != 1) return false;
        }
        return true;
      },
      60s));
  std::mt19937 rng(5);
  std::vector<int32_t> prompt(12);
  for (int32_t& t : prompt) t = static_cast<int32_t>(3 + rng() % 400);
  for (auto& [id, node] : nodes) {
    const json out =
        node->generate({{"prompt_tokens", prompt}, {"max_tokens", 8}, {"temperature", 0}});
    CHECK(!out["tokens"].empty());
  }
  const auto status = run_process(scheduler.cli_command({kCli, "nodes", "--json"}));
  REQUIRE(status.exit_code == 0);
  const json listed = json::parse(status.out)["nodes"];
  CHECK(listed.size() == 3);
  for (const json& n : listed) CHECK(n["expert_type"] == "q8_0");
}

TEST_CASE("gguf cluster: nodes of another precision join only when the scheduler allows it") {
  GgufModels m;
  // The scheduler reads the Q8_0 file; a bf16 node must be allowed explicitly.
  SchedulerProcess strict(DMOE_SCHEDULER_PATH, m.work.path() / "strict",
                          model_scheduler_flags(m.gguf));
  std::filesystem::create_directories(m.work.path() / "strict");
  strict.start();
  NodeProcess same(
      m.work.path(), "q8",
      node_args(m.hf, free_tcp_port(), attached_args(strict, "q8", {"--expert-type", "q8_0"})));
  NodeProcess other(m.work.path(), "bf16",
                    node_args(m.hf, free_tcp_port(), attached_args(strict, "bf16")));
  REQUIRE(same.wait_ready());
  CHECK(eventually([&] { return same.stats()["scheduler"]["attached"].get<bool>(); }, 30s));
  // A refused node exits (code 2) with the scheduler's reason in its log.
  const std::optional<int> code = other.process().wait(30s);
  REQUIRE(code.has_value());
  CHECK(*code == 2);
  const std::string log = other.process().log();
  CHECK(log.find("holds its experts in bf16, the scheduler's model in q8_0") != std::string::npos);
  CHECK(log.find("expert_types") != std::string::npos);

  std::filesystem::create_directories(m.work.path() / "mixed");
  SchedulerProcess mixed(DMOE_SCHEDULER_PATH, m.work.path() / "mixed",
                         model_scheduler_flags(m.gguf, {"--expert-types", "bf16"}));
  mixed.start();
  NodeProcess allowed(m.work.path(), "bf16-ok",
                      node_args(m.hf, free_tcp_port(), attached_args(mixed, "bf16-ok")));
  REQUIRE(allowed.wait_ready());
  CHECK(eventually([&] { return allowed.stats()["scheduler"]["attached"].get<bool>(); }, 30s));
}

}  // namespace
}  // namespace dancemoe::testing
