// End to end with a real OpenAI client that no one here wrote (issue 6): the
// `openai` npm package, run by Node.js, against a node started here. The
// package is fetched by deploy/install-deps.sh into tests/fixtures/npm.
#include <doctest/doctest.h>

#include "tests/integration/openai_node.h"
#include "tests/support/process.h"

namespace dancemoe::testing {

TEST_CASE("openai client: the openai npm package completes, chats, streams and sees errors") {
  const std::filesystem::path node_js = "/usr/bin/node";
  const std::filesystem::path package = source_dir() / "tests/fixtures/npm/openai/package.json";
  if (!std::filesystem::exists(node_js)) {
    MESSAGE("SKIPPED: no Node.js at " << node_js << " (deploy/install-deps.sh installs it)");
    return;
  }
  if (!std::filesystem::exists(package)) {
    MESSAGE("SKIPPED: " << package << " missing: run deploy/install-deps.sh (npm pack openai)");
    return;
  }
  OpenAiTestNode n({"--api-key", "e2e-key"});
  const std::string script =
      (source_dir() / "tests/integration/openai_client/openai_client.mjs").string();
  // NODE_PATH lets the script's require('openai') find the unpacked fixture.
  const ProcessResult r =
      run_process({"/usr/bin/env", "NODE_PATH=" + (source_dir() / "tests/fixtures/npm").string(),
                   node_js.string(), script, n.base_url() + "/v1", "e2e-key", n.model_name()},
                  std::chrono::seconds(60));
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);

  const json& c = out["completion"];
  CHECK(c["object"] == "text_completion");
  CHECK(c["model"] == n.model_name());
  CHECK((c["finish_reason"] == "stop" || c["finish_reason"] == "length"));
  CHECK(c["usage"]["total_tokens"].get<int64_t>() ==
        c["usage"]["prompt_tokens"].get<int64_t>() +
            c["usage"]["completion_tokens"].get<int64_t>());
  CHECK(c["usage"]["completion_tokens"].get<int64_t>() <= 8);
  // What the client got is what the node generates for that request.
  const auto direct = n.post("/v1/completions",
                             R"({"prompt": "Hello", "max_tokens": 8, "temperature": 0,
                                 "seed": 7, "stop": ["\u0000"]})",
                             "e2e-key");
  REQUIRE(direct.status == 200);
  CHECK(c["text"] == direct.body["choices"][0]["text"]);

  const json& chat = out["chat"];
  CHECK(chat["object"] == "chat.completion");
  CHECK(chat["role"] == "assistant");
  CHECK(chat["content"].is_string());
  CHECK(chat["usage"]["completion_tokens"].get<int64_t>() >= 1);

  const json& s = out["stream"];
  CHECK(s["role"] == "assistant");
  CHECK(s["content"] == chat["content"]);  // greedy: the stream says what the whole answer said
  CHECK(s["finish_reason"] == chat["finish_reason"]);
  CHECK(s["usage"] == chat["usage"]);
  CHECK(s["chunks"].get<int>() >= 3);

  CHECK(out["models"] == json::array({n.model_name()}));

  const json& e = out["errors"];
  CHECK(e["unknown_model"]["status"] == 404);
  CHECK(e["unknown_model"]["class"] == "NotFoundError");
  CHECK(e["unknown_model"]["code"] == "model_not_found");
  CHECK(e["unknown_model"]["param"] == "model");
  CHECK(e["bad_temperature"]["status"] == 400);
  CHECK(e["bad_temperature"]["class"] == "BadRequestError");
  CHECK(e["bad_temperature"]["param"] == "temperature");
  CHECK(e["wrong_key"]["status"] == 401);
  CHECK(e["wrong_key"]["class"] == "AuthenticationError");
}

}  // namespace dancemoe::testing
