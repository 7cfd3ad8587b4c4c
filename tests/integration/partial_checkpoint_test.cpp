// Partial checkpoints with real processes on 127.0.0.1 (issue 18,
// docs/partial-checkpoints.md): `dancemoe model split` / `headers` from the
// CLI; a scheduler on a header-only copy and three nodes, each with a third
// of the expert files, that start, fetch what their placement needs, keep it
// on disk, and answer as one node with the whole model does; a first
// placement refused while an expert exists nowhere; a full expert store;
// an experts-only node; bad input named.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "common/model/split/expert_files.h"
#include "tests/integration/cli_path.h"
#include "tests/integration/node_cluster.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/placement_experts.h"
#include "tests/support/process.h"
#include "tests/support/scheduler_process.h"

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

int64_t count_files(const fs::path& dir) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) n += e.path().extension() == ".bin";
  return n;
}

// The tiny model, its split, a header-only copy, and per-node copies of the
// split keeping the experts whose flat index is `i` mod 3.
struct Splits {
  Splits() : work("partial") {
    full = work.path() / "tiny";
    write_model(SyntheticModelSpec{}, full);
    split = work.path() / "split";
    headers = work.path() / "headers";
    auto s =
        run_process({kCli, "model", "split", "--model", full.string(), "--out", split.string()});
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    auto h = run_process(
        {kCli, "model", "headers", "--model", full.string(), "--out", headers.string()});
    INFO(h.err);
    REQUIRE(h.exit_code == 0);
    layers = moe_layers_of(full);
  }
  // A copy of the split keeping only the experts `keep(layer index, expert)` says.
  fs::path copy(const std::string& name, const std::function<bool(int32_t, int32_t)>& keep) {
    const fs::path dir = work.path() / name;
    fs::copy(split, dir, fs::copy_options::recursive);
    for (size_t li = 0; li < layers.size(); ++li) {
      for (int32_t e = 0; e < 8; ++e) {
        if (!keep(static_cast<int32_t>(li), e)) {
          fs::remove(dir / "experts" / ExpertFiles::file_name({layers[li], e}));
        }
      }
    }
    return dir;
  }
  TempDir work;
  fs::path full, split, headers;
  std::vector<int32_t> layers;
};

bool all_at_version(std::map<std::string, std::unique_ptr<NodeProcess>>& nodes, uint64_t v) {
  for (auto& [id, node] : nodes) {
    if (node->stats()["placement_version"].get<uint64_t>() != v) return false;
  }
  return true;
}

}  // namespace

TEST_CASE(
    "partial checkpoints: split and headers from the CLI keep the model id, and bad input is "
    "named") {
  Splits s;
  const auto info = [&](const fs::path& dir) {
    auto r = run_process({kCli, "model-info", "--model", dir.string()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  };
  const json full = info(s.full);
  CHECK(info(s.split)["model_id"] == full["model_id"]);
  CHECK(info(s.headers)["model_id"] == full["model_id"]);
  CHECK(count_files(s.split / "experts") == 24);
  CHECK_FALSE(fs::exists(s.headers / "dense.bin"));
  CHECK(count_files(s.headers / "experts") == 0);

  // --out must be new or empty.
  auto again =
      run_process({kCli, "model", "split", "--model", s.full.string(), "--out", s.split.string()});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("not empty") != std::string::npos);
  // A split directory missing its dense part.
  const fs::path broken = s.copy("broken", [](int32_t, int32_t) { return true; });
  fs::remove(broken / "dense.bin");
  auto missing = run_process({kCli, "model-info", "--model", broken.string()});
  CHECK(missing.exit_code != 0);
  CHECK(missing.err.find((broken / "dense.bin").string()) != std::string::npos);

  // A header-only copy given to a node that serves prompts: refused at start, by name.
  write_json(s.work.path() / "none.json", {{"version", 1}, {"nodes", json::object()}});
  NodeProcess node(
      s.work.path(), "h",
      node_args(s.headers, free_tcp_port(),
                {"--placement", (s.work.path() / "none.json").string(), "--insecure"}));
  const std::optional<int> code = node.process().wait(30s);
  REQUIRE(code.has_value());
  CHECK(*code == 1);
  CHECK(node.process().log().find("header-only copy") != std::string::npos);
  CHECK(node.process().log().find(s.headers.string()) != std::string::npos);
}

TEST_CASE(
    "partial checkpoints: a scheduler on headers and three nodes with a third of the experts "
    "each serve as one full node, keep what they fetch, and restart without fetching") {
  Splits s;
  std::map<std::string, fs::path> dirs;
  for (int32_t i = 0; i < 3; ++i) {
    dirs[std::string(1, static_cast<char>('a' + i))] =
        s.copy(std::string("node-") + static_cast<char>('a' + i),
               [i](int32_t li, int32_t e) { return (li * 8 + e) % 3 == i; });
  }
  SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, s.work.path(), model_scheduler_flags(s.headers));
  scheduler.start();
  // a has room for more than its third: it must fetch some experts.
  const std::map<std::string, std::string> budgets = {{"a", "160K"}, {"b", "100K"}, {"c", "100K"}};
  const std::vector<std::string> f32 = {"--precision", "f32", "--wire-dtype", "f32"};
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  std::map<std::string, int> ports;
  auto start = [&](const std::string& id) {
    std::vector<std::string> extra = {"--expert-memory", budgets.at(id)};
    extra.insert(extra.end(), f32.begin(), f32.end());
    if (!ports.count(id)) ports[id] = free_tcp_port();
    nodes[id] = std::make_unique<NodeProcess>(
        s.work.path(), id, node_args(dirs[id], ports[id], attached_args(scheduler, id, extra)));
  };
  for (const std::string id : {"a", "b", "c"}) start(id);
  for (auto& [id, node] : nodes) REQUIRE(node->wait_ready());
  REQUIRE(eventually([&] { return all_at_version(nodes, 1); }, 60s));
  const json a_stats = nodes["a"]->stats();
  CHECK(a_stats["migration"]["experts_fetched"].get<int64_t>() > 0);
  CHECK(a_stats["migration"]["experts_stored"].get<int64_t>() ==
        a_stats["migration"]["experts_fetched"].get<int64_t>());
  CHECK(count_files(dirs["a"] / "experts") ==
        8 + a_stats["migration"]["experts_stored"].get<int64_t>());
  const auto listed = run_process(scheduler.cli_command({kCli, "nodes", "--json"}));
  REQUIRE(listed.exit_code == 0);
  // A named copy: the loop would otherwise iterate a temporary's member after its end.
  const json listed_nodes = json::parse(listed.out)["nodes"];
  REQUIRE(listed_nodes.size() == 3);
  for (const json& n : listed_nodes) {
    CHECK(n["role"] == "full");
    CHECK(n["expert_files"].is_number());
  }

  // One node with the whole model, standalone, is the reference.
  PlacementSpec all;
  for (int32_t x = 0; x < 8; ++x) all.experts["ref"].push_back(x);
  const int ref_port = free_tcp_port();
  write_json(s.work.path() / "ref.json",
             placement_json(all, s.layers, 8, {{"ref", endpoint_of(ref_port)}}));
  std::vector<std::string> ref_args = f32;
  ref_args.insert(ref_args.end(), {"--placement", (s.work.path() / "ref.json").string()});
  NodeProcess reference(s.work.path(), "ref", node_args(s.full, ref_port, ref_args));
  REQUIRE(reference.wait_ready());
  std::mt19937 rng(18);
  for (auto& [id, node] : nodes) {
    std::vector<int32_t> prompt(12);
    for (int32_t& t : prompt) t = static_cast<int32_t>(3 + rng() % 500);
    const json want = reference.generate(greedy_request(prompt, 12, true));
    const json got = node->generate(greedy_request(prompt, 12, true));
    CAPTURE(id);
    CHECK(got["tokens"] == want["tokens"]);
    CHECK(got["activations"]["remote"].get<int64_t>() > 0);
    float worst = 0;
    for (size_t k = 0; k < want["logits"].size(); ++k) {
      const auto a = got["logits"][k].get<std::vector<float>>();
      const auto b = want["logits"][k].get<std::vector<float>>();
      worst = std::max(worst, max_abs_diff(a, b));
    }
    MESSAGE("node " << id << ": max |logit difference| to the full node " << worst);
    CHECK(worst <= 1e-3f);
  }

  // A restart finds on disk what it fetched: a again, standalone on the
  // committed placement, loads every expert from its files.
  Result<json> committed = scheduler_query(scheduler, "placement");
  REQUIRE(committed.is_ok());
  const size_t held = experts_of(*committed, "a").size();
  REQUIRE(held > 8);
  nodes.clear();
  write_json(s.work.path() / "committed.json", *committed);
  std::vector<std::string> again_args = f32;
  again_args.insert(again_args.end(), {"--placement", (s.work.path() / "committed.json").string(),
                                       "--expert-memory", "160K"});
  NodeProcess again(s.work.path(), "a", node_args(dirs["a"], free_tcp_port(), again_args));
  REQUIRE(again.wait_ready());
  const json restarted = again.stats();
  CHECK(restarted["migration"]["experts_fetched"].get<int64_t>() == 0);
  CHECK(restarted["migration"]["experts_loaded"].get<size_t>() == held);
}

TEST_CASE("partial checkpoints: no first placement while an expert exists on no node") {
  Splits s;
  const ExpertRef gone{s.layers[0], 3};
  auto keep = [&](int32_t li, int32_t e) { return !(li == 0 && e == 3); };
  const fs::path a = s.copy("node-a", keep), b = s.copy("node-b", keep);
  SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, s.work.path(), model_scheduler_flags(s.headers));
  scheduler.start();
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  nodes["a"] = std::make_unique<NodeProcess>(
      s.work.path(), "a", node_args(a, free_tcp_port(), attached_args(scheduler, "a")));
  nodes["b"] = std::make_unique<NodeProcess>(
      s.work.path(), "b", node_args(b, free_tcp_port(), attached_args(scheduler, "b")));
  for (auto& [id, node] : nodes) REQUIRE(node->wait_ready());
  json status;
  REQUIRE(eventually(
      [&] {
        auto r = run_process(scheduler.cli_command({kCli, "status", "--json"}));
        if (r.exit_code != 0) return false;
        status = json::parse(r.out);
        return status["last_decision"].is_object();
      },
      30s));
  const std::string message = status["last_decision"]["message"].get<std::string>();
  CAPTURE(message);
  CHECK(status["last_decision"]["outcome"] == "error");
  CHECK(message.find("exist on no up node") != std::string::npos);
  CHECK(message.find("(experts/" + ExpertFiles::file_name(gone) + ")") != std::string::npos);
  CHECK(nodes["a"]->stats()["placement_version"].get<uint64_t>() == 0);

  // A node that brings the file unblocks the cold start.
  const fs::path c = s.copy("node-c", [&](int32_t li, int32_t e) { return li == 0 && e == 3; });
  nodes["c"] = std::make_unique<NodeProcess>(
      s.work.path(), "c", node_args(c, free_tcp_port(), attached_args(scheduler, "c")));
  REQUIRE(nodes["c"]->wait_ready());
  CHECK(eventually([&] { return all_at_version(nodes, 1); }, 60s));
}

TEST_CASE("partial checkpoints: a full expert store is counted, and the node serves from memory") {
  // The node's experts/ is a tmpfs of 8 KiB in a mount namespace of its own
  // (as root: unshare -m): every expert written there hits ENOSPC.
  if (run_process({"/usr/bin/unshare", "-m", "/bin/true"}, 10s).exit_code != 0) {
    MESSAGE("SKIPPED: unshare -m is not permitted here (needs root or user namespaces)");
    return;
  }
  Splits s;
  const fs::path a = s.copy("node-a", [](int32_t, int32_t) { return false; });
  const fs::path b = s.copy("node-b", [](int32_t, int32_t) { return true; });
  SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, s.work.path(), model_scheduler_flags(s.headers));
  scheduler.start();
  NodeProcess nb(
      s.work.path(), "b",
      node_args(b, free_tcp_port(), attached_args(scheduler, "b", {"--expert-memory", "100K"})));
  REQUIRE(nb.wait_ready());
  // a: the node, wrapped -- `sh -c SCRIPT NODE ARGS...` mounts, then execs the node.
  std::vector<std::string> wrapped = {"/usr/bin/unshare", "-m", "/bin/sh", "-c",
                                      "mount -t tmpfs -o size=8k dmoe-full '" +
                                          (a / "experts").string() + "' && exec \"$0\" \"$@\""};
  const fs::path ready = s.work.path() / "ready_a.json";
  std::vector<std::string> node_argv = {DMOE_NODE_PATH, "--node-id",       "a",
                                        "--ready-file", ready.string(),    "--log-level",
                                        "info",         "--expert-memory", "200K"};
  for (const std::string& x : node_args(a, free_tcp_port(), attached_args(scheduler, "a"))) {
    node_argv.push_back(x);
  }
  wrapped.insert(wrapped.end(), node_argv.begin(), node_argv.end());
  ChildProcess na(wrapped, s.work.path() / "log_a.txt");
  REQUIRE(wait_for_file(ready, 30s));
  std::ifstream ready_in(ready);
  const json r = json::parse(ready_in);
  const std::string http = r["http"].get<std::string>();
  httplib::Client client("http://" + http);
  client.set_read_timeout(60, 0);
  json stats;
  REQUIRE(eventually(
      [&] {
        auto res = client.Get("/v1/stats");
        if (!res || res->status != 200) return false;
        stats = json::parse(res->body);
        return stats["placement_version"].get<uint64_t>() == 1;
      },
      60s));
  CHECK(stats["migration"]["experts_fetched"].get<int64_t>() > 0);
  CHECK(stats["migration"]["store_failures"].get<int64_t>() > 0);
  CHECK(stats["migration"]["last_store_error"].get<std::string>().find("No space left") !=
        std::string::npos);
  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("dancemoe_node_expert_store_writes_total{outcome=\"failed\"}") !=
        std::string::npos);
  // It serves all the same, with its experts in memory.
  auto gen = client.Post(
      "/v1/generate",
      json{{"prompt_tokens", {5, 6, 7, 8}}, {"max_tokens", 4}, {"temperature", 0}}.dump(),
      "application/json");
  REQUIRE(gen);
  CHECK(gen->status == 200);
  CHECK(na.log().find("expert store") != std::string::npos);
}

TEST_CASE("partial checkpoints: an experts-only node from a header-only copy serves its experts") {
  Splits s;
  SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, s.work.path(), model_scheduler_flags(s.headers));
  scheduler.start();
  // a has the whole split but room for a third; x must take the rest, and
  // fetches it (from a's disk).
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  nodes["a"] = std::make_unique<NodeProcess>(
      s.work.path(), "a",
      node_args(s.split, free_tcp_port(),
                attached_args(scheduler, "a", {"--expert-memory", "100K"})));
  nodes["x"] = std::make_unique<NodeProcess>(
      s.work.path(), "x",
      node_args(s.headers, free_tcp_port(),
                attached_args(scheduler, "x", {"--role", "experts", "--expert-memory", "300K"})));
  REQUIRE(nodes["a"]->wait_ready());
  REQUIRE(nodes["x"]->wait_ready());
  REQUIRE(eventually([&] { return nodes["a"]->stats()["placement_version"].get<uint64_t>() == 1; },
                     60s));
  // x reports the committed version with its next heartbeat, after a does.
  json x;
  REQUIRE(eventually(
      [&] {
        const auto listed = run_process(scheduler.cli_command({kCli, "nodes", "--json"}));
        if (listed.exit_code != 0) return false;
        const json listed_nodes = json::parse(listed.out)["nodes"];
        for (const json& n : listed_nodes) {
          if (n["id"] == "x") x = n;
        }
        return x.is_object() && x["placement_version"].get<uint64_t>() == 1;
      },
      30s));
  CHECK(x["role"] == "experts");
  CHECK(x["http_endpoint"] == "");
  CHECK(x["experts_held"].get<int64_t>() > 0);
  const json out = nodes["a"]->generate(greedy_request({9, 10, 11, 12, 13, 14}, 6, true));
  CHECK(out["activations"]["remote"].get<int64_t>() > 0);
  CHECK(out["activations"]["offloaded"].get<int64_t>() == 0);
  // Bad flags are named.
  auto bad = run_process({DMOE_NODE_PATH, "--node-id", "y", "--model", s.headers.string(),
                          "--placement", "p.json", "--insecure", "--role", "expert"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("--role: expected full or experts") != std::string::npos);
}

}  // namespace dancemoe::testing
