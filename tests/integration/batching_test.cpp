// Continuous batching and the prefix cache through a real node process over
// HTTP (edge_node/agent/batch_scheduler.h): concurrent streams run together,
// a full queue answers 429, a disconnect frees the KV blocks, a request over
// the KV budget is a named 400, and a chat's next turn hits the prefix cache.
#include <doctest/doctest.h>

#include "tests/integration/openai_node.h"

namespace dancemoe::testing {
namespace {

const json kLongStream = {{"prompt", "Hello"},
                          {"max_tokens", 60000},
                          {"temperature", 0},
                          {"ignore_eos", true},
                          {"stream", true}};

}  // namespace

TEST_CASE("batching: two streams run together, a third request beyond the queue gets 429") {
  OpenAiTestNode n({"--context", "65536", "--max-batch", "2", "--max-queued", "0"});
  OpenAiRawClient a(n.http(), "/v1/completions", kLongStream.dump());
  OpenAiRawClient b(n.http(), "/v1/completions", kLongStream.dump());
  // Both stream at once: one at a time, the second would wait for 60000 tokens.
  REQUIRE(a.read_until("\"text\"", std::chrono::seconds(30)));
  REQUIRE(b.read_until("\"text\"", std::chrono::seconds(30)));
  CHECK(n.metric_is("dancemoe_node_batch_sequences", 2));
  // Each reserved the blocks of its prompt + 60000 tokens (16 positions a block).
  const double both = n.metric("dancemoe_node_kv_blocks_used");
  CHECK(both >= 2 * 3751);
  const auto refused = n.post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})");
  CHECK(refused.status == 429);
  CHECK(refused.body["error"]["message"].get<std::string>().find("--max-queued 0") !=
        std::string::npos);
  // Hanging up frees a sequence's blocks at once.
  a.hang_up();
  CHECK(openai_eventually([&] { return n.metric("dancemoe_node_kv_blocks_used") == both / 2; },
                          std::chrono::seconds(5)));
  b.hang_up();
  CHECK(openai_eventually([&] { return n.metric("dancemoe_node_kv_blocks_used") == 0; },
                          std::chrono::seconds(5)));
  CHECK(n.post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})").status == 200);
  CHECK(n.metric("dancemoe_node_batch_steps_total") > 0);
}

TEST_CASE("batching: a request over the whole KV budget is a 400 naming --kv-memory") {
  // The tiny preset's KV is a few KiB per position: 64K holds few blocks.
  OpenAiTestNode n({"--kv-memory", "64K"});
  const auto r = n.post("/v1/completions", R"({"prompt": "x", "max_tokens": 2000})");
  CHECK(r.status == 400);
  CHECK(r.raw.find("--kv-memory") != std::string::npos);
  CHECK(n.post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})").status == 200);
}

TEST_CASE("batching: the next turn of a chat reuses the history's KV, the same as a cold run") {
  OpenAiTestNode n;
  OpenAiTestNode cold({"--prefix-cache", "0"});
  const std::string history =
      "System: you are a helpful assistant of the lab, answering briefly. User: what is a "
      "mixture of experts, and how does a router pick the experts of a token?";
  const auto first = n.post(
      "/v1/completions", json{{"prompt", history}, {"max_tokens", 12}, {"temperature", 0}}.dump());
  REQUIRE(first.status == 200);
  const std::string next = history + first.body["choices"][0]["text"].get<std::string>() +
                           " User: and the shared expert?";
  const json body = {{"prompt", next}, {"max_tokens", 12}, {"temperature", 0}};
  const auto warm = n.post("/v1/completions", body.dump());
  const auto reference = cold.post("/v1/completions", body.dump());
  REQUIRE(warm.status == 200);
  REQUIRE(reference.status == 200);
  CHECK(warm.body["choices"][0]["text"] == reference.body["choices"][0]["text"]);
  CHECK(n.metric("dancemoe_node_prefix_cache_hits_total") == 1);
  CHECK(n.metric("dancemoe_node_prefix_cache_saved_tokens_total") >= 16);
  CHECK(cold.metric("dancemoe_node_prefix_cache_hits_total") == 0);
}

}  // namespace dancemoe::testing
