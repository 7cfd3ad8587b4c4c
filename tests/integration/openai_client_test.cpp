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

namespace {

// Whether `text` is a JSON value matching the person schema of openai_features.mjs.
void check_person(const std::string& text) {
  INFO("output: " << text);
  const json v = json::parse(text, nullptr, false);
  REQUIRE(v.is_object());
  CHECK(v.size() == 4);
  REQUIRE(v["name"].is_string());
  CHECK(json(v["name"]).get<std::string>().size() <= 12 * 4);
  REQUIRE(v["age"].is_number_integer());
  CHECK(v["age"].get<int64_t>() >= 0);
  CHECK(v["age"].get<int64_t>() <= 150);
  CHECK((v["role"] == "admin" || v["role"] == "user"));
  REQUIRE(v["tags"].is_array());
  CHECK(v["tags"].size() <= 3);
  for (const json& tag : v["tags"]) CHECK(tag.is_string());
}

}  // namespace

TEST_CASE("openai client: seeds, n, logprobs, penalties, prompts, json_schema and tokenize") {
  const std::filesystem::path node_js = "/usr/bin/node";
  const std::filesystem::path package = source_dir() / "tests/fixtures/npm/openai/package.json";
  if (!std::filesystem::exists(node_js) || !std::filesystem::exists(package)) {
    MESSAGE("SKIPPED: no Node.js or no openai package (deploy/install-deps.sh)");
    return;
  }
  OpenAiTestNode n({"--api-key", "e2e-key"});
  const std::string script =
      (source_dir() / "tests/integration/openai_client/openai_features.mjs").string();
  const ProcessResult r =
      run_process({"/usr/bin/env", "NODE_PATH=" + (source_dir() / "tests/fixtures/npm").string(),
                   node_js.string(), script, n.base_url() + "/v1", "e2e-key", n.model_name()},
                  std::chrono::seconds(240));
  INFO("stdout: " << r.out.substr(0, 4000) << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);

  // A fresh seed per request: three unseeded answers are not all the same;
  // a seed repeats its answer.
  const json& unseeded = out["seeds"]["unseeded"];
  CHECK_FALSE((unseeded[0] == unseeded[1] && unseeded[1] == unseeded[2]));
  CHECK(out["seeds"]["seeded"][0] == out["seeds"]["seeded"][1]);

  CHECK(out["n"]["indexes"] == json::array({0, 1, 2}));
  CHECK(out["n"]["contents"][0] == out["n"]["single"]);
  CHECK(out["n"]["usage"]["completion_tokens"].get<int64_t>() >= 3);

  const json& lp = out["chat_logprobs"]["content"];
  CHECK(lp.size() == out["chat_logprobs"]["completion_tokens"].get<size_t>());
  for (const json& t : lp) {
    CHECK(t["logprob"].get<double>() <= 0.0);
    REQUIRE(t["top_logprobs"].size() == 2);
    CHECK(t["top_logprobs"][0]["token"] == t["token"]);  // greedy
    CHECK(t["bytes"].is_array());
  }
  const json& s = out["stream_logprobs"];
  CHECK(s["tokens"] == s["whole_tokens"]);
  CHECK(s["text"] == s["whole_text"]);
  CHECK(s["tokens"].size() == s["usage"]["completion_tokens"].get<size_t>());
  const json& cl = out["completion_logprobs"];
  CHECK(cl["tokens"].size() == cl["token_logprobs"].size());
  CHECK(cl["top_logprobs"].size() == cl["tokens"].size());
  for (const json& top : cl["top_logprobs"]) CHECK(top.size() >= 1);
  CHECK(cl["text_offset"][0] == 0);

  CHECK(out["penalised"].is_string());
  const std::string biased = out["biased"];
  CHECK_FALSE(biased.empty());
  CHECK(biased == std::string(biased.size(), biased[0]));  // one forced token, repeated
  CHECK(out["listed"].size() == 2);
  CHECK(out["listed"][1]["index"] == 1);
  CHECK(out["token_prompts"]["n"] == 2);
  CHECK(out["token_prompts"]["usage"]["prompt_tokens"] == 5);
  CHECK(out["max_completion_tokens"] == 3);

  REQUIRE(out["json_object"].size() == 4);
  int stopped = 0;
  for (const json& one : out["json_object"]) {
    if (one["finish_reason"] != "stop") continue;  // cut by max_tokens inside a string
    ++stopped;
    CHECK(json::parse(one["content"].get<std::string>(), nullptr, false).is_object());
  }
  CHECK(stopped >= 1);
  for (const json& one : out["json_schema"]) {
    CHECK(one["finish_reason"] == "stop");
    check_person(one["content"]);
  }
  check_person(out["json_schema_stream"]);

  CHECK(out["ignored_fields"] == 1);
  CHECK(n.node().process().log().find("ignoring fields this node does not implement: "
                                      "metadata, service_tier, store, verbosity") !=
        std::string::npos);

  const json& tok = out["tokenize"];
  CHECK(tok["content"] == "Hello world");
  std::string pieces;
  for (const json& t : tok["tokens"]) pieces += t["piece"].get<std::string>();
  CHECK(pieces == "Hello world");

  const json& e = out["errors"];
  for (const auto& [field, param] :
       std::vector<std::pair<std::string, std::string>>{{"n", "n"},
                                                        {"top_logprobs", "top_logprobs"},
                                                        {"presence_penalty", "presence_penalty"},
                                                        {"logit_bias", "logit_bias"},
                                                        {"logit_bias_range", "logit_bias"},
                                                        {"response_format", "response_format"},
                                                        {"schema", "response_format"},
                                                        {"misspelt", "presense_penalty"},
                                                        {"prompt_ids", "prompt"},
                                                        {"tools", "tools"}}) {
    INFO(field);
    REQUIRE(e[field].is_object());
    CHECK(e[field]["status"] == 400);
    CHECK(e[field]["class"] == "BadRequestError");
    CHECK(e[field]["param"] == param);
  }
  CHECK(e["schema"]["code"] == "unsupported_schema");
  CHECK(e["schema"]["message"].get<std::string>().find("properties.zip.pattern: 'pattern' is not "
                                                       "supported") != std::string::npos);
  CHECK(e["misspelt"]["code"] == "unknown_parameter");
  CHECK(e["tools"]["code"] == "tools_unsupported");
}

namespace {

// A get_weather call as openai_tools.mjs defines the tool: its arguments
// follow the schema (the call was generated under it).
void check_weather_call(const json& call) {
  INFO("call: " << call.dump());
  CHECK(call["type"] == "function");
  CHECK(call["id"].get<std::string>().rfind("call_", 0) == 0);
  CHECK(call["function"]["name"] == "get_weather");
  const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  REQUIRE(args.is_object());
  CHECK(args.size() == 2);
  REQUIRE(args["city"].is_string());
  CHECK(json(args["city"]).get<std::string>().size() <= 12 * 4);
  CHECK((args["unit"] == "celsius" || args["unit"] == "fahrenheit"));
}

}  // namespace

TEST_CASE("openai client: tool calls, whole and streamed, required, and the tool's turn") {
  const std::filesystem::path node_js = "/usr/bin/node";
  const std::filesystem::path package = source_dir() / "tests/fixtures/npm/openai/package.json";
  if (!std::filesystem::exists(node_js) || !std::filesystem::exists(package)) {
    MESSAGE("SKIPPED: no Node.js or no openai package (deploy/install-deps.sh)");
    return;
  }
  // Qwen3's own template: it renders tools and the model writes Hermes calls.
  OpenAiTestNode n({"--api-key", "e2e-key"}, "tiny", "127.0.0.1:0", "qwen3.jinja");
  const std::string script =
      (source_dir() / "tests/integration/openai_client/openai_tools.mjs").string();
  const ProcessResult r =
      run_process({"/usr/bin/env", "NODE_PATH=" + (source_dir() / "tests/fixtures/npm").string(),
                   node_js.string(), script, n.base_url() + "/v1", "e2e-key", n.model_name()},
                  std::chrono::seconds(240));
  INFO("stdout: " << r.out.substr(0, 4000) << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);

  const json& named = out["named"];
  CHECK(named["finish_reason"] == "tool_calls");
  CHECK(named["content"].is_null());
  REQUIRE(named["tool_calls"].size() == 1);
  check_weather_call(named["tool_calls"][0]);

  const json& streamed = out["streamed"];
  CHECK(streamed["finish_reason"] == "tool_calls");
  REQUIRE(streamed["tool_calls"].size() == 1);
  check_weather_call(streamed["tool_calls"][0]);
  // Greedy: the stream's call is the whole answer's.
  CHECK(streamed["tool_calls"][0]["function"]["arguments"] ==
        named["tool_calls"][0]["function"]["arguments"]);
  CHECK(streamed["arguments_done"]["name"] == "get_weather");
  CHECK(streamed["arguments_done"]["index"] == 0);
  // The helper parsed the arguments (the tool is strict).
  CHECK(streamed["arguments_done"]["parsed_arguments"].is_object());

  for (const json& one : out["required"]) {
    CHECK(one["finish_reason"] == "tool_calls");
    REQUIRE(one["tool_calls"].size() == 1);
    const json& call = one["tool_calls"][0];
    CHECK((call["function"]["name"] == "get_weather" || call["function"]["name"] == "get_time"));
    CHECK(
        json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false).is_object());
  }

  const json& followup = out["followup"];
  CHECK(followup["prompt_tokens"].get<int64_t>() > followup["first_prompt_tokens"].get<int64_t>());
  CHECK(followup["message"]["role"] == "assistant");

  const json& e = out["errors"];
  for (const auto& [field, param] : std::vector<std::pair<std::string, std::string>>{
           {"no_tool_call_id", "messages[1].tool_call_id"},
           {"unknown_function", "tool_choice"},
           {"bad_kwargs", "chat_template_kwargs"}}) {
    INFO(field);
    REQUIRE(e[field].is_object());
    CHECK(e[field]["status"] == 400);
    CHECK(e[field]["class"] == "BadRequestError");
    CHECK(e[field]["param"] == param);
  }
}

}  // namespace dancemoe::testing
