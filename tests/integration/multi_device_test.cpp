// A node with two devices in a real cluster (issue 12): `dancemoe-node
// --devices cpu:0,cpu:1` (two slices of this machine's cores, each with its
// own threads and experts) attached to the real scheduler beside a
// one-device node. The scheduler sees both devices, commits a placement
// that puts experts on each of them, the node computes each expert on the
// device that holds it and reports per-device compute, and greedy output
// equals one node holding every expert on one device, token for token.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "tests/integration/node_cluster.h"
#include "tests/support/scheduler_process.h"

#if DMOE_HAVE_CUDA
#include "kernels/cuda/device.cuh"
#endif

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;

// A synthetic model of `preset` written to `dir`, with what the cases size
// their nodes by.
struct TestModel {
  std::vector<int32_t> layers;  // MoE layers
  int32_t n_experts = 0;
  uint64_t all_expert_bytes = 0;
};

TestModel write_test_model(const std::filesystem::path& dir, const std::string& preset) {
  SyntheticModelSpec spec;
  spec.preset = preset;
  write_model(spec, dir);
  TestModel m;
  m.layers = moe_layers_of(dir);
  auto checkpoint = Checkpoint::open(dir);
  REQUIRE(checkpoint.is_ok());
  m.n_experts = static_cast<int32_t>((*checkpoint)->config().n_experts);
  for (int32_t l : m.layers) {
    for (int32_t e = 0; e < m.n_experts; ++e)
      m.all_expert_bytes += (*checkpoint)->expert_bytes(l, e);
  }
  return m;
}

const json* node_in(const json& list, const std::string& id) {
  for (const json& n : list) {
    if (n["id"] == id) return &n;
  }
  return nullptr;
}

TEST_CASE("devices: a two-device node in a cluster places, computes and answers as one node") {
  TempDir work("devices");
  const std::filesystem::path model = work.path() / "tiny";
  const TestModel m = write_test_model(model, "tiny");
  const std::vector<int32_t>& layers = m.layers;
  const int32_t n_experts = m.n_experts;
  const uint64_t all_bytes = m.all_expert_bytes;

  SchedulerProcess scheduler(
      DMOE_SCHEDULER_PATH, work.path(),
      {"--model", model.string(), "--heartbeat-interval", "0.2", "--report-interval", "0.4",
       "--cold-start-settle", "0.5", "--prepare-timeout", "30", "--interval", "3600"});
  scheduler.start();
  const std::vector<std::string> f32 = {"--precision", "f32", "--wire-dtype", "f32"};
  auto attached = [&](const std::string& id, const std::string& devices, uint64_t memory) {
    std::vector<std::string> extra = {"--scheduler", scheduler.endpoint(), "--devices",
                                      devices,       "--expert-memory",    std::to_string(memory)};
    extra.insert(extra.end(), f32.begin(), f32.end());
    const std::vector<std::string> keys = scheduler.node_args(id);
    extra.insert(extra.end(), keys.begin(), keys.end());
    return std::make_unique<NodeProcess>(work.path(), id, node_args(model, free_tcp_port(), extra));
  };
  // "a": two devices with room for 70 % of the experts between them; "b":
  // one device with room for 40 %. The cold start covers every expert once.
  auto a = attached("a", "cpu:0,cpu:1", all_bytes * 7 / 10);
  auto b = attached("b", "cpu", all_bytes * 4 / 10);
  REQUIRE(a->wait_ready());
  REQUIRE(b->wait_ready());
  REQUIRE(eventually(
      [&] {
        auto s = scheduler_query(scheduler, "status");
        return s.is_ok() && !(*s)["placement"].is_null() &&
               a->stats()["placement_version"].get<uint64_t>() >= 1 &&
               b->stats()["placement_version"].get<uint64_t>() >= 1;
      },
      60s));

  // The scheduler knows a's two devices and what the placement put on each.
  auto nodes = scheduler_query(scheduler, "nodes");
  REQUIRE(nodes.is_ok());
  const json* na = node_in((*nodes)["nodes"], "a");
  REQUIRE(na != nullptr);
  INFO((*na)["devices"].dump());
  REQUIRE((*na)["devices"].size() == 2);
  for (const json& d : (*na)["devices"]) {
    CHECK(d["kind"] == "cpu");
    CHECK(d["experts"].get<int64_t>() > 0);
    CHECK(d["bytes_used"].get<uint64_t>() > 0);
    CHECK(d["bytes_used"].get<uint64_t>() <= d["budget_bytes"].get<uint64_t>());
  }
  CHECK((*na)["devices"][0]["name"] == "cpu:0");
  CHECK((*na)["devices"][1]["name"] == "cpu:1");
  // The node holds them there too.
  const json stats = a->stats();
  REQUIRE(stats["devices"].size() == 2);
  CHECK(stats["devices"][0]["experts"].get<int64_t>() ==
        (*na)["devices"][0]["experts"].get<int64_t>());
  CHECK(stats["devices"][1]["experts"].get<int64_t>() ==
        (*na)["devices"][1]["experts"].get<int64_t>());

  // The reference: one standalone node, one device, every expert.
  const int port = free_tcp_port();
  PlacementSpec single;
  for (int32_t x = 0; x < n_experts; ++x) single.experts["all"].push_back(x);
  write_json(work.path() / "single.json",
             placement_json(single, layers, n_experts, {{"all", endpoint_of(port)}}));
  std::vector<std::string> reference_args = f32;
  reference_args.insert(reference_args.end(),
                        {"--placement", (work.path() / "single.json").string()});
  NodeProcess reference(work.path(), "all", node_args(model, port, reference_args));
  REQUIRE(reference.wait_ready());
  for (uint32_t seed : {3u, 4u}) {
    std::mt19937 rng(seed);
    std::vector<int32_t> prompt(12);
    for (int32_t& t : prompt) t = 3 + static_cast<int32_t>(rng() % 500);
    const json want = reference.generate(greedy_request(prompt, 32));
    for (NodeProcess* node : {a.get(), b.get()}) {
      CAPTURE(node->id());
      const json got = node->generate(greedy_request(prompt, 32));
      REQUIRE(got["tokens"].size() == 32);
      CHECK(got["tokens"] == want["tokens"]);
    }
  }

  // Both devices of "a" computed experts, and the scheduler measured them.
  const json after = a->stats();
  for (const json& d : after["devices"]) {
    CAPTURE(d.dump());
    CHECK(d["compute"]["pairs"].get<uint64_t>() > 0);
    CHECK(d["compute"]["busy_us"].get<double>() > 0);
  }
  REQUIRE(eventually(
      [&] {
        auto n = scheduler_query(scheduler, "nodes");
        if (!n.is_ok()) return false;
        const json* node = node_in((*n)["nodes"], "a");
        return node != nullptr && !(*node)["devices"][0]["us_per_pair"].is_null() &&
               !(*node)["devices"][1]["us_per_pair"].is_null();
      },
      20s));
  // The status summary lists the devices too.
  auto status = scheduler_query(scheduler, "status");
  REQUIRE(status.is_ok());
  const json* sa = node_in((*status)["nodes"]["list"], "a");
  REQUIRE(sa != nullptr);
  CHECK((*sa)["devices"].size() == 2);
}

TEST_CASE("devices: an unknown device or a budget over the device is refused before loading") {
  TempDir work("devices-bad");
  const std::filesystem::path model = work.path() / "tiny";
  SyntheticModelSpec spec;
  spec.preset = "tiny";
  write_model(spec, model);
  PlacementSpec empty;
  empty.experts["x"] = {};
  write_json(work.path() / "p.json",
             placement_json(empty, moe_layers_of(model), 8, {{"x", "tcp://127.0.0.1:1"}}));
  struct Case {
    std::vector<std::string> flags;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"--devices", "gpu0"}, "--devices 'gpu0'"},
      {{"--devices", "cpu:0,cpu:5"}, "cpu:5"},
      {{"--devices", "cpu", "--device-memory", "cpu=1000000T"}, "cpu: --device-memory asks for"},
      {{"--devices", "cpu", "--device-memory", "cuda:0=1G"}, "cuda:0 is not among --devices cpu"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.want);
    std::vector<std::string> flags = {"--placement", (work.path() / "p.json").string()};
    flags.insert(flags.end(), c.flags.begin(), c.flags.end());
    NodeProcess node(work.path(), "x", node_args(model, free_tcp_port(), flags));
    const std::optional<int> code = node.process().wait(30s);
    REQUIRE(code.has_value());
    CHECK(*code != 0);
    CHECK(node.process().log().find(c.want) != std::string::npos);
  }
}

int n_cuda_devices() {
#if DMOE_HAVE_CUDA
  std::string why;
  return kernels::cuda::device_count(&why);
#else
  return 0;
#endif
}

// Greedy output of a GPU node against the all-CPU reference, both in bf16,
// with each generated token's logits. The GPU sums in other orders, so its
// logits differ by bf16's noise, and on a random-weight model a router's
// near-tie can flip on that noise: from there the two answers compute
// different things (measured on an H200: one of three 32-token answers
// parted at token 5, another's logits moved 0.06 at token 14 with the same
// tokens). What must hold is the first token: its logits -- the whole
// prompt through every layer, with experts on the GPU, the node's CPU and
// the peers -- within the tolerance (normalised by the row's largest
// |logit|), and the same choice. Returns the steps that agree (same token,
// logits within the tolerance) before the first that does not.
int check_first_token_and_count(const json& got, const json& want, double tolerance) {
  const auto& a = got["tokens"];
  const auto& b = want["tokens"];
  REQUIRE(a.size() == b.size());
  REQUIRE(got["logits"].size() == a.size());
  REQUIRE(want["logits"].size() == b.size());
  REQUIRE(!b.empty());
  int agreed = 0;
  for (size_t k = 0; k < b.size(); ++k) {
    const auto g = got["logits"][k].get<std::vector<float>>();
    const auto w = want["logits"][k].get<std::vector<float>>();
    REQUIRE(g.size() == w.size());
    double diff = 0, scale = 1e-6;
    for (size_t i = 0; i < w.size(); ++i) {
      diff = std::fmax(diff, std::fabs(static_cast<double>(g[i]) - w[i]));
      scale = std::fmax(scale, std::fabs(w[i]));
    }
    if (k == 0) {
      INFO("first token: normalised logits difference " << diff / scale);
      CHECK(diff / scale <= tolerance);
      CHECK(a[0] == b[0]);
    }
    if (a[k] != b[k] || diff / scale > tolerance) break;
    ++agreed;
  }
  return agreed;
}

// The GPU check of the devices issue: one node computes on cuda:0 (dense part
// and hot experts) and its CPU (the rest of its experts) in a 3-node
// cluster; greedy output equals the all-CPU cluster's reference (bf16: the
// GPU computes with bf16 activations) as far as bf16's noise lets it
// (above); the all-CPU nodes' exactly.
TEST_CASE("devices: a cuda:0,cpu node in a 3-node cluster answers as the all-CPU cluster") {
  if (n_cuda_devices() == 0) {
    MESSAGE("SKIPPED: no CUDA device (this case runs where a GPU is lent)");
    return;
  }
  TempDir work("devices-gpu");
  const std::filesystem::path model = work.path() / "small";
  const TestModel m = write_test_model(model, "small");
  const std::vector<int32_t>& layers = m.layers;
  const int32_t n_experts = m.n_experts;
  const uint64_t all_bytes = m.all_expert_bytes;
  SchedulerProcess scheduler(
      DMOE_SCHEDULER_PATH, work.path(),
      {"--model", model.string(), "--heartbeat-interval", "0.2", "--report-interval", "0.4",
       "--cold-start-settle", "0.5", "--prepare-timeout", "60", "--interval", "3600"});
  scheduler.start();
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  const std::string third = std::to_string(all_bytes / 3);
  const std::map<std::string, std::vector<std::string>> flags = {
      {"a",
       {"--devices", "cuda:0,cpu", "--device-memory", "cuda:0=" + third, "--device-memory",
        "cpu=" + third}},
      {"b", {"--expert-memory", std::to_string(all_bytes * 4 / 10)}},
      {"c", {"--expert-memory", std::to_string(all_bytes * 4 / 10)}}};
  for (const auto& [id, extra] : flags) {
    std::vector<std::string> args = {"--scheduler", scheduler.endpoint(), "--wire-dtype", "f32"};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::vector<std::string> keys = scheduler.node_args(id);
    args.insert(args.end(), keys.begin(), keys.end());
    nodes[id] =
        std::make_unique<NodeProcess>(work.path(), id, node_args(model, free_tcp_port(), args));
  }
  for (auto& [id, node] : nodes) REQUIRE(node->wait_ready(120s));
  REQUIRE(eventually(
      [&] {
        for (auto& [id, node] : nodes) {
          if (node->stats()["placement_version"].get<uint64_t>() < 1) return false;
        }
        return true;
      },
      120s));
  const json devices = nodes["a"]->stats()["devices"];
  INFO(devices.dump());
  REQUIRE(devices.size() == 2);
  CHECK(devices[0]["kind"] == "cuda");
  CHECK(devices[0]["experts"].get<int64_t>() > 0);

  const int port = free_tcp_port();
  PlacementSpec single;
  for (int32_t x = 0; x < n_experts; ++x) single.experts["all"].push_back(x);
  write_json(work.path() / "single.json",
             placement_json(single, layers, n_experts, {{"all", endpoint_of(port)}}));
  NodeProcess reference(
      work.path(), "all",
      node_args(model, port, {"--placement", (work.path() / "single.json").string()}));
  REQUIRE(reference.wait_ready());
  for (uint32_t seed : {11u, 12u, 13u}) {
    std::mt19937 rng(seed);
    std::vector<int32_t> prompt(16);
    for (int32_t& t : prompt) t = 3 + static_cast<int32_t>(rng() % 4000);
    const json want = reference.generate(greedy_request(prompt, 32, /*logits=*/true));
    for (auto& [id, node] : nodes) {
      CAPTURE(id);
      const json got = node->generate(greedy_request(prompt, 32, /*logits=*/true));
      if (id == "a") {
        MESSAGE("seed " << seed << ": the GPU node agrees for "
                        << check_first_token_and_count(got, want, 5e-2) << " of 32 steps");
      } else {
        CHECK(got["tokens"] == want["tokens"]);
      }
    }
  }
  for (const json& d : nodes["a"]->stats()["devices"]) {
    MESSAGE(d["name"] << ": " << d["compute"].dump());
  }
}

}  // namespace
}  // namespace dancemoe::testing
