#include "common/placement/routing_trace.h"

#include <doctest/doctest.h>

#include <fstream>

#include "tests/support/paths.h"

namespace dancemoe {
namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST_CASE("routing trace: the runtime format round-trips") {
  testing::TempDir dir("trace");
  RoutingTrace trace;
  trace.n_layers = 2;
  trace.top_k = 2;
  trace.origins = {"a", "b"};
  trace.requests.push_back(TraceRequest{0, 7, 2, {1, 2, 3, 0, 4, 5, 6, 7}});
  trace.requests.push_back(TraceRequest{1, 1, 1, {9, 8, 7, 6}});
  REQUIRE(write_routing_trace(dir.path() / "t.csv", trace).is_ok());
  Result<RoutingTrace> back = read_routing_trace(dir.path() / "t.csv");
  REQUIRE(back.is_ok());
  CHECK(back->n_layers == 2);
  CHECK(back->top_k == 2);
  CHECK(back->max_expert == 9);
  CHECK(back->origins == trace.origins);
  REQUIRE(back->requests.size() == 2);
  CHECK(back->requests[0].id == 7);
  CHECK(back->requests[0].n_tokens == 2);
  CHECK(back->requests[0].experts == trace.requests[0].experts);
  CHECK(back->requests[1].experts == trace.requests[1].experts);
}

TEST_CASE("routing trace: rows may come in any order -- shared column names are accepted") {
  testing::TempDir dir("trace");
  write_file(dir.path() / "t.csv",
             "sequence_id,domain,token_index,layer,e0,e1\r\n"
             "3,math,0,1,5,6\n3,math,1,0,7,8\n3,math,0,0,1,2\n3,math,1,1,9,10\n");
  Result<RoutingTrace> t = read_routing_trace(dir.path() / "t.csv");
  REQUIRE(t.is_ok());
  CHECK(t->origins == std::vector<std::string>{"math"});
  CHECK(t->requests[0].experts == std::vector<int16_t>{1, 2, 5, 6, 7, 8, 9, 10});
}

TEST_CASE("routing trace: malformed files are refused with file and line") {
  testing::TempDir dir("trace");
  const auto path = dir.path() / "t.csv";
  write_file(path, "origin_node,request_id,token_index,layer,e0\na,1,0,0,x\n");
  Result<RoutingTrace> t = read_routing_trace(path);
  CHECK(t.status().code() == StatusCode::kInvalidArgument);
  CHECK(t.status().message().find("t.csv:2: e0 must be an expert id") != std::string::npos);
  write_file(path,
             "origin_node,request_id,token_index,layer,e0\na,1,0,0,1\na,1,0,1,1\na,1,1,1,1\n");
  t = read_routing_trace(path);
  CHECK(t.status().message().find("not a multiple of the 2 layers") != std::string::npos);
  write_file(path, "origin_node,request_id,token_index,layer,e0\na,1,0,0,1\na,1,2,0,1\n");
  t = read_routing_trace(path);
  CHECK(t.status().message().find("lacks token 1 layer 0") != std::string::npos);
  write_file(path, "node,request_id,token_index,layer,e0\n");
  CHECK(read_routing_trace(path).status().message().find("header must name") != std::string::npos);
  CHECK(read_routing_trace(dir.path() / "missing.csv").status().code() == StatusCode::kNotFound);
}

TEST_CASE("routing trace: counts tables are dense and checked against the model shape") {
  testing::TempDir dir("trace");
  const auto path = dir.path() / "c.csv";
  write_file(path, "domain,layer,expert,count\ncode,0,1,5\ncode,1,0,2\nmath,0,0,1\n");
  Result<CountsTable> c = read_counts_csv(path, 2, 2);
  REQUIRE(c.is_ok());
  CHECK(c->origins == std::vector<std::string>{"code", "math"});
  CHECK(c->counts[0] == std::vector<double>{0, 5, 2, 0});
  CHECK(c->counts[1] == std::vector<double>{1, 0, 0, 0});
  CHECK(read_counts_csv(path, 1, 2).status().message().find("outside the model") !=
        std::string::npos);
}

TEST_CASE("routing trace: the shared OLMoE trace reads through the same format") {
  const auto shared = testing::shared_file("traces/olmoe_1b7b_domains/tokens_sample.csv");
  if (!shared) return;
  const std::filesystem::path dir = shared->parent_path();
  Result<RoutingTrace> t = read_routing_trace(dir / "tokens_sample.csv");
  REQUIRE(t.is_ok());
  CHECK(t->n_layers == 16);
  CHECK(t->top_k == 8);
  CHECK(t->max_expert == 63);
  CHECK(t->origins.size() == 4);
  CHECK(t->requests.size() == 80);
  int64_t tokens = 0;
  for (const TraceRequest& r : t->requests) tokens += r.n_tokens;
  CHECK(tokens == 10240);
  // The per-domain counts are the same prompts aggregated: both readers agree.
  Result<CountsTable> counts = read_counts_csv(dir / "counts_by_domain.csv", 16, 64);
  REQUIRE(counts.is_ok());
  REQUIRE(counts->origins.size() == 4);
  for (const TraceRequest& r : t->requests) {
    const int32_t o = counts->origin_index(t->origins[r.origin]);
    REQUIRE(o >= 0);
    for (int32_t tok = 0; tok < r.n_tokens; ++tok) {
      for (int32_t l = 0; l < 16; ++l) {
        for (int32_t j = 0; j < 8; ++j) {
          counts->counts[o][l * 64 + r.experts[(tok * 16 + l) * 8 + j]] -= 1;
        }
      }
    }
  }
  for (const auto& row : counts->counts) {
    for (double v : row) CHECK(v == 0.0);
  }
}

}  // namespace
}  // namespace dancemoe
