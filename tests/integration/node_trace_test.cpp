// `dancemoe-node --record-trace`: the recorded routing reads back through
// the simulator's reader (common/placement/routing_trace.h), which the
// node's writer does not use: the format is checked, not assumed.
#include <doctest/doctest.h>

#include "common/placement/routing_trace.h"
#include "tests/integration/node_cluster.h"

namespace dancemoe::testing {

TEST_CASE("node trace: recorded per-token routing is a valid simulator trace") {
  TempDir work("node_trace");
  const std::filesystem::path model = work.path() / "tiny";
  write_model(SyntheticModelSpec{}, model);
  const std::vector<int32_t> layers = moe_layers_of(model);
  PlacementSpec spec;
  spec.experts["n1"] = {0, 1, 2, 3, 4, 5, 6, 7};
  const int port = free_tcp_port();
  write_json(work.path() / "p.json", placement_json(spec, layers, 8, {{"n1", endpoint_of(port)}}));
  const std::filesystem::path trace = work.path() / "trace.csv";
  NodeProcess node(work.path(), "n1",
                   node_args(model, port,
                             {"--placement", (work.path() / "p.json").string(), "--record-trace",
                              trace.string()}));
  REQUIRE(node.wait_ready());
  const json first = node.generate({{"prompt_tokens", {5, 6, 7, 8}},
                                    {"max_tokens", 6},
                                    {"temperature", 0},
                                    {"ignore_eos", true}});
  const json second = node.generate(
      {{"prompt_tokens", {9, 10}}, {"max_tokens", 3}, {"temperature", 0}, {"ignore_eos", true}});
  CHECK(node.process().stop() == 0);

  Result<RoutingTrace> t = read_routing_trace(trace);
  INFO(t.status().to_string());
  REQUIRE(t.is_ok());
  CHECK(t->n_layers == static_cast<int32_t>(layers.size()));
  CHECK(t->top_k == 2);
  REQUIRE(t->origins == std::vector<std::string>{"n1"});
  REQUIRE(t->requests.size() == 2);
  // Every token fed to the model: the prompt, then each generated token but the last.
  CHECK(t->requests[0].n_tokens == 4 + 6 - 1);
  CHECK(t->requests[1].n_tokens == 2 + 3 - 1);
  CHECK(t->max_expert < 8);
}

}  // namespace dancemoe::testing
