#include "edge_node/trace/trace_writer.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {

TEST_CASE("trace writer: one row per token and MoE layer in the simulator's format") {
  test_support::TinyModel model;  // MoE layers 0, 2, 3 -> trace layers 0, 1, 2; top-2
  const std::filesystem::path path = model.dir.path() / "trace.csv";
  auto w = TraceWriter::open(path, model.config(), "node-a");
  REQUIRE(w.is_ok());
  RoutingDecision r;
  r.n_tokens = 2;
  r.top_k = 2;
  r.expert_ids = {3, 1, 0, 7};
  r.weights = {0.6f, 0.4f, 0.9f, 0.1f};
  (*w)->begin_forward(17, 0);
  (*w)->on_routing(0, r);
  (*w)->on_routing(2, r);
  REQUIRE((*w)->end_request().is_ok());
  (*w)->begin_forward(18, 5);
  (*w)->on_routing(3, r);
  (*w)->discard_request();  // a failed request leaves nothing
  CHECK((*w)->rows_written() == 4);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() ==
        "origin_node,request_id,token_index,layer,e0,e1\n"
        "node-a,17,0,0,3,1\n"
        "node-a,17,1,0,0,7\n"
        "node-a,17,0,1,3,1\n"
        "node-a,17,1,1,0,7\n");
  CHECK(TraceWriter::open(path, model.config(), "a,b").status().code() ==
        StatusCode::kInvalidArgument);
}

}  // namespace dancemoe::node
