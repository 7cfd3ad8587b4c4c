// `dancemoe prompt` and `dancemoe chat` against a real node (issue 6, CLI).
#include <doctest/doctest.h>

#include "tests/integration/openai_node.h"
#include "tests/support/process.h"

namespace dancemoe::testing {

TEST_CASE("cli prompt and chat: stream a node's answers, chat keeps history with piped stdin") {
  OpenAiTestNode n;
  const std::string url = n.base_url();
  const ProcessResult p = run_process({DMOE_CLI_PATH, "prompt", "Hello there", "--node", url,
                                       "--max-tokens", "8", "--temperature", "0"},
                                      std::chrono::seconds(30));
  INFO("prompt: " << p.out << p.err);
  REQUIRE(p.exit_code == 0);
  const auto direct = n.post("/v1/chat/completions",
                             R"({"messages": [{"role": "user", "content": "Hello there"}],
                                 "max_tokens": 8, "temperature": 0})");
  REQUIRE(direct.status == 200);
  CHECK(p.out == direct.body["choices"][0]["message"]["content"].get<std::string>() + "\n");

  // Two turns from a pipe: the second request carries the first answer.
  const std::string script = "printf 'Hi\\nAgain\\n' | '" + std::string(DMOE_CLI_PATH) +
                             "' chat --node " + url + " --max-tokens 4 --temperature 0";
  const ProcessResult c = run_process({"/bin/sh", "-c", script}, std::chrono::seconds(30));
  INFO("chat: " << c.out << c.err);
  REQUIRE(c.exit_code == 0);
  const auto first = n.post("/v1/chat/completions",
                            R"({"messages": [{"role": "user", "content": "Hi"}],
                                "max_tokens": 4, "temperature": 0})");
  const std::string a1 = first.body["choices"][0]["message"]["content"];
  const json second_body = {{"messages",
                             {{{"role", "user"}, {"content", "Hi"}},
                              {{"role", "assistant"}, {"content", a1}},
                              {{"role", "user"}, {"content", "Again"}}}},
                            {"max_tokens", 4},
                            {"temperature", 0}};
  const auto second = n.post("/v1/chat/completions", second_body.dump());
  const std::string a2 = second.body["choices"][0]["message"]["content"];
  CHECK(c.out == a1 + "\n" + a2 + "\n");
  CHECK(n.metric_is(R"(dancemoe_http_requests_total{endpoint="/v1/chat/completions",status="200"})",
                    6));  // prompt, direct, two chat turns, first, second

  const ProcessResult down =
      run_process({DMOE_CLI_PATH, "prompt", "x", "--node", "http://127.0.0.1:1"});
  CHECK(down.exit_code == 1);
  CHECK(down.err.find("cannot reach the node") != std::string::npos);
}

}  // namespace dancemoe::testing
