// The OpenAI-compatible API of one real node process (issue 6): response
// shapes, streaming, one test per validation class, the queue limit,
// disconnect-cancels-generation, the API key and /metrics.
#include <doctest/doctest.h>

#include <cstdlib>

#include "tests/integration/openai_node.h"

namespace dancemoe::testing {
namespace {

// The "data: {...}" events of an SSE body, [DONE] excluded; sets *done.
std::vector<json> sse_events(const std::string& body, bool* done) {
  std::vector<json> events;
  *done = false;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string data = body.substr(at + 6, end - at - 6);
    if (data == "[DONE]") {
      *done = true;
    } else {
      events.push_back(json::parse(data));
    }
    at = end + 2;
  }
  return events;
}

void check_error(const OpenAiTestNode::Reply& r, int status, const std::string& param,
                 const std::string& code = "") {
  INFO("reply " << r.status << " " << r.raw);
  CHECK(r.status == status);
  REQUIRE(r.body.is_object());
  REQUIRE(r.body.contains("error"));
  const json& e = r.body["error"];
  CHECK(e["message"].is_string());
  CHECK_FALSE(e["message"].get<std::string>().empty());
  CHECK(e["type"].is_string());
  if (param.empty()) {
    CHECK(e["param"].is_null());
  } else {
    CHECK(e["param"] == param);
  }
  if (!code.empty()) CHECK(e["code"] == code);
}

}  // namespace

TEST_CASE("openai api: completion, chat, streamed chat and models in OpenAI's shape") {
  OpenAiTestNode n;
  const std::string model = n.model_name();

  const auto models = n.get("/v1/models");
  REQUIRE(models.status == 200);
  CHECK(models.body["object"] == "list");
  CHECK(models.body["data"][0]["id"] == model);
  CHECK(n.get("/v1/models/" + model).status == 200);
  CHECK(n.get("/v1/models/other").status == 404);

  const auto c = n.post("/v1/completions", json{{"model", model},
                                                {"prompt", "Hello"},
                                                {"max_tokens", 12},
                                                {"temperature", 0},
                                                {"ignore_eos", true}}
                                               .dump());
  REQUIRE(c.status == 200);
  CHECK(c.body["object"] == "text_completion");
  CHECK(c.body["id"].get<std::string>().rfind("cmpl-", 0) == 0);
  CHECK(c.body["model"] == model);
  CHECK(c.body["choices"][0]["index"] == 0);
  CHECK(c.body["choices"][0]["text"].is_string());
  CHECK(c.body["choices"][0]["finish_reason"] == "length");
  CHECK(c.body["usage"]["completion_tokens"] == 12);
  CHECK(c.body["usage"]["total_tokens"].get<int64_t>() ==
        c.body["usage"]["prompt_tokens"].get<int64_t>() + 12);
  // The same greedy request through the node's own API gives the same text.
  const auto g = n.post("/v1/generate", R"({"prompt": "Hello", "max_tokens": 12,
                                            "temperature": 0, "ignore_eos": true})");
  REQUIRE(g.status == 200);
  CHECK(g.body["text"] == c.body["choices"][0]["text"]);

  const json chat = {{"model", model},
                     {"messages",
                      {{{"role", "system"}, {"content", "Be brief."}},
                       {{"role", "user"}, {"content", "Hi there"}}}},
                     {"max_tokens", 10},
                     {"temperature", 0}};
  const auto whole = n.post("/v1/chat/completions", chat.dump());
  REQUIRE(whole.status == 200);
  CHECK(whole.body["object"] == "chat.completion");
  CHECK(whole.body["choices"][0]["message"]["role"] == "assistant");
  const std::string text = whole.body["choices"][0]["message"]["content"];
  const std::string reason = whole.body["choices"][0]["finish_reason"];
  CHECK((reason == "stop" || reason == "length"));

  json streamed = chat;
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  const auto s = n.post("/v1/chat/completions", streamed.dump());
  REQUIRE(s.status == 200);
  bool done = false;
  const std::vector<json> events = sse_events(s.raw, &done);
  CHECK(done);
  REQUIRE(events.size() >= 3);  // role, ..., finish, usage
  CHECK(events.front()["choices"][0]["delta"]["role"] == "assistant");
  std::string joined;
  for (const json& e : events) {
    CHECK(e["object"] == "chat.completion.chunk");
    CHECK(e["id"] == events.front()["id"]);
    if (!e["choices"].empty() && e["choices"][0]["delta"].contains("content")) {
      joined += e["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  CHECK(joined == text);  // greedy: streamed and whole agree
  const json& last_choice = events[events.size() - 2]["choices"][0];
  CHECK(last_choice["finish_reason"] == reason);
  CHECK(events.back()["choices"].empty());
  CHECK(events.back()["usage"]["completion_tokens"] == whole.body["usage"]["completion_tokens"]);

  // The model id (hash) is accepted as a model name too.
  const std::string id = n.get("/v1/stats").body["model_id"];
  CHECK(n.post("/v1/completions", json{{"model", id}, {"prompt", "x"}, {"max_tokens", 1}}.dump())
            .status == 200);
}

TEST_CASE("openai api: include_stats ends a stream with the answer's DanceMoE statistics") {
  OpenAiTestNode n;
  const json request = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                        {"max_tokens", 6},
                        {"temperature", 0},
                        {"ignore_eos", true},
                        {"stream", true},
                        {"stream_options", {{"include_usage", true}, {"include_stats", true}}}};
  const auto s = n.post("/v1/chat/completions", request.dump());
  REQUIRE(s.status == 200);
  bool done = false;
  const std::vector<json> events = sse_events(s.raw, &done);
  CHECK(done);
  REQUIRE(events.size() >= 3);
  const json& last = events.back();
  CHECK(last["object"] == "chat.completion.chunk");
  CHECK(last["choices"].empty());
  REQUIRE(last.contains("dancemoe"));
  const json& stats = last["dancemoe"];
  CHECK(stats["completion_tokens"] == 6);
  CHECK(stats["decode_tokens_per_s"].get<double>() > 0);
  // One node holding every expert: all activations computed here, no remote call.
  CHECK(stats["activations"]["total"].get<int64_t>() > 0);
  CHECK(stats["activations"]["local"] == stats["activations"]["total"]);
  CHECK(stats["local_share"] == 1.0);
  CHECK(stats["remote_calls"] == 0);
  CHECK(events[events.size() - 2].contains("usage"));
  // Without asking, no extension reaches an OpenAI client.
  json plain = request;
  plain["stream_options"] = {{"include_usage", true}};
  CHECK(n.post("/v1/chat/completions", plain.dump()).raw.find("dancemoe") == std::string::npos);
  json typo = request;
  typo["stream_options"] = {{"include_statz", true}};
  check_error(n.post("/v1/chat/completions", typo.dump()), 400, "stream_options.include_statz");
}

TEST_CASE("openai api: the chat page is served at / and /v1/stats names the chat format") {
  OpenAiTestNode n({"--api-key", "k"});
  const auto page = n.get("/");
  REQUIRE(page.status == 200);  // public: the page holds no data
  CHECK(page.raw.find("<title>DanceMoE chat</title>") != std::string::npos);
  CHECK(n.get("/chat.js").raw.find("include_stats") != std::string::npos);
  CHECK(n.get("/dancemoe.css").status == 200);
  CHECK(n.get("/v1/stats").status == 401);
  const auto stats = n.get("/v1/stats", "k");
  REQUIRE(stats.status == 200);
  CHECK(stats.body["model"]["name"] == n.model_name());
  CHECK(stats.body["model"]["chat_format"] == "chatml");  // the synthetic tokenizer's
  CHECK(stats.body["model"]["context_tokens"].get<int64_t>() > 0);
}

TEST_CASE("openai api: malformed JSON is a 400 invalid_request_error") {
  OpenAiTestNode n;
  check_error(n.post("/v1/completions", "{\"prompt\": \"unterminated"), 400, "", "invalid_json");
  check_error(n.post("/v1/chat/completions", "[]"), 400, "(body)");
}

TEST_CASE("openai api: wrong types are a 400 naming the field") {
  OpenAiTestNode n;
  check_error(n.post("/v1/completions", R"({"prompt": 42})"), 400, "prompt");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "max_tokens": "8"})"), 400,
              "max_tokens");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "stop": {"a": 1}})"), 400, "stop");
  check_error(n.post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": 1}]})"),
              400, "messages[0].content");
  check_error(n.post("/v1/chat/completions", R"({"messages": [], "stream": "yes"})"), 400,
              "messages");
}

TEST_CASE("openai api: absurd values are a 400 naming the field") {
  OpenAiTestNode n;
  check_error(n.post("/v1/completions", R"({"prompt": "x", "max_tokens": -1})"), 400, "max_tokens");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "temperature": 2.1})"), 400,
              "temperature");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "temperature": -1})"), 400,
              "temperature");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "top_p": 0})"), 400, "top_p");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "n": 17})"), 400, "n");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "n": 0})"), 400, "n");
  // The compatibility fields of issue 16, each with a bad value.
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty"},
           {R"({"prompt": "x", "frequency_penalty": -2.5})", "frequency_penalty"},
           {R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty"},
           {R"({"prompt": "x", "min_p": 2})", "min_p"},
           {R"({"prompt": "x", "logit_bias": {"x": 1}})", "logit_bias"},
           {R"({"prompt": "x", "logit_bias": {"99999999": 1}})", "logit_bias"},
           {R"({"prompt": "x", "logprobs": 21})", "logprobs"},
           {R"({"prompt": "x", "echo": true, "logprobs": 2})", "echo"},
           {R"({"prompt": "x", "best_of": 1, "n": 2})", "best_of"},
           {R"({"prompt": "x", "max_completion_tokens": 0})", "max_completion_tokens"},
           {R"({"prompt": [1, 99999999]})", "prompt"},
           {R"({"prompt": ["x", 3]})", "prompt"},
           {R"({"prompt": "x", "response_format": {"type": "yaml"}})", "response_format"},
           {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema":
               {"name": "a", "schema": {"type": "string", "pattern": "a+"}}}})",
            "response_format"},
           {R"({"prompt": "x", "guided_regex": "a+"})", "guided_regex"},
       }) {
    INFO(body);
    check_error(n.post("/v1/completions", body), 400, param);
  }
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  check_error(n.post("/v1/chat/completions", chat + R"("top_logprobs": 2})"), 400, "top_logprobs");
  check_error(n.post("/v1/chat/completions", chat + R"("logprobs": 2})"), 400, "logprobs");
  check_error(n.post("/v1/chat/completions", chat + R"("tool_choice": "required"})"), 400,
              "tool_choice");
  check_error(n.post("/v1/completions", R"({"prompt": "x", "bogus": 1})"), 400, "bogus",
              "unknown_parameter");
  check_error(n.post("/v1/completions", R"({"prompt": ""})"), 400, "prompt");
}

TEST_CASE("openai api: an unknown model is a 404 model_not_found") {
  OpenAiTestNode n;
  check_error(n.post("/v1/completions", R"({"model": "gpt-4", "prompt": "x"})"), 404, "model",
              "model_not_found");
  check_error(n.post("/v1/chat/completions",
                     R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})"),
              404, "model", "model_not_found");
}

TEST_CASE("openai api: --served-model-name names the model and the directory name stays an alias") {
  OpenAiTestNode n({"--served-model-name", "lab-moe", "--served-model-name", "moe"});
  const auto models = n.get("/v1/models");
  REQUIRE(models.status == 200);
  REQUIRE(models.body["data"].size() == 3);
  CHECK(models.body["data"][0]["id"] == "lab-moe");
  CHECK(models.body["data"][1]["id"] == "moe");
  CHECK(models.body["data"][2]["id"] == n.model_name());
  for (const std::string& name : std::vector<std::string>{"lab-moe", "moe", n.model_name()}) {
    CAPTURE(name);
    CHECK(n.get("/v1/models/" + name).status == 200);
    const auto c =
        n.post("/v1/completions", json{{"model", name}, {"prompt", "x"}, {"max_tokens", 1}}.dump());
    REQUIRE(c.status == 200);
    CHECK(c.body["model"] == "lab-moe");  // answers carry the first name
  }
  check_error(n.post("/v1/completions", R"({"model": "other", "prompt": "x"})"), 404, "model",
              "model_not_found");
}

TEST_CASE("openai api: a prompt longer than the context is a 400 context_length_exceeded") {
  OpenAiTestNode n({"--context", "64"});
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "word" + std::to_string(i) + " ";
  check_error(n.post("/v1/completions", json{{"prompt", long_prompt}}.dump()), 400, "prompt",
              "context_length_exceeded");
  check_error(n.post("/v1/chat/completions",
                     json{{"messages", {{{"role", "user"}, {"content", long_prompt}}}}}.dump()),
              400, "messages", "context_length_exceeded");
  check_error(n.post("/v1/completions", R"({"prompt": "hi", "max_tokens": 100})"), 400,
              "max_tokens", "context_length_exceeded");
  // Without max_tokens a chat takes what is left of the context.
  const auto fits = n.post("/v1/chat/completions",
                           R"({"messages": [{"role": "user", "content": "hi"}],
                               "temperature": 0, "ignore_eos": true})");
  REQUIRE(fits.status == 200);
  CHECK(fits.body["usage"]["total_tokens"] == 64);
}

TEST_CASE("openai api: a client that disconnects cancels its generation") {
  // A long generation: 60000 tokens would take many seconds.
  OpenAiTestNode n({"--context", "65536"});
  const json body = {{"prompt", "Hello"},
                     {"max_tokens", 60000},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"stream", true}};
  {
    OpenAiRawClient client(n.http(), "/v1/completions", body.dump());
    REQUIRE(client.read_until("\"text\"", std::chrono::seconds(30)));
    REQUIRE(n.engine_busy());
  }  // hangs up
  CHECK(openai_eventually([&] { return !n.engine_busy(); }, std::chrono::seconds(3)));
  CHECK(openai_eventually(
      [&] {
        return n.metric(R"(dancemoe_http_requests_cancelled_total{endpoint="/v1/completions"})") ==
               1;
      },
      std::chrono::seconds(3)));
  const uint64_t after_stream = n.forward_tokens();
  CHECK(after_stream < 30000);

  // Not streamed: the client gives up while the node computes.
  json whole = body;
  whole.erase("stream");
  {
    OpenAiRawClient client(n.http(), "/v1/completions", whole.dump());
    REQUIRE(openai_eventually([&] { return n.forward_tokens() > after_stream + 50; },
                              std::chrono::seconds(30)));
  }
  CHECK(openai_eventually([&] { return !n.engine_busy(); }, std::chrono::seconds(3)));
  CHECK(n.metric_is(R"(dancemoe_http_requests_cancelled_total{endpoint="/v1/completions"})", 2));
  const uint64_t stopped = n.forward_tokens();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(n.forward_tokens() == stopped);  // nothing runs on
  CHECK(stopped - after_stream < 30000);
  MESSAGE("tokens run before the cancel took effect: streamed " << after_stream << ", whole "
                                                                << stopped - after_stream);
  // The slot is free again.
  CHECK(n.post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})").status == 200);
}

TEST_CASE("openai api: a full queue answers 429 with an OpenAI error") {
  // One sequence at a time, so the second request waits.
  OpenAiTestNode n({"--context", "65536", "--max-queued", "1", "--max-batch", "1"});
  const json long_body = {{"prompt", "Hello"},
                          {"max_tokens", 60000},
                          {"temperature", 0},
                          {"ignore_eos", true},
                          {"stream", true}};
  OpenAiRawClient running(n.http(), "/v1/completions", long_body.dump());
  REQUIRE(running.read_until("\"text\"", std::chrono::seconds(30)));
  OpenAiRawClient waiting(n.http(), "/v1/completions", long_body.dump());
  REQUIRE(openai_eventually([&] { return n.get("/v1/stats").body["http_queue"]["waiting"] == 1; },
                            std::chrono::seconds(5)));
  const auto refused =
      n.post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})");
  check_error(refused, 429, "", "resource_exhausted");
  CHECK(refused.body["error"]["type"] == "rate_limit_error");
  CHECK(refused.body["error"]["message"].get<std::string>().find("--max-queued 1") !=
        std::string::npos);
  CHECK(n.metric("dancemoe_http_queue_rejected_total") == 1);
  CHECK(n.metric_is(R"(dancemoe_http_requests_total{endpoint="/v1/chat/completions",status="429"})",
                    1));
  running.hang_up();
  waiting.hang_up();
  CHECK(openai_eventually([&] { return !n.engine_busy(); }, std::chrono::seconds(5)));
  CHECK(n.post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})").status == 200);
}

TEST_CASE(
    "openai api: with an API key /v1 needs the bearer token, /health and /metrics stay open") {
  ::setenv("DANCEMOE_API_KEY", "sesame-123", 1);
  OpenAiTestNode n;  // the key comes from the environment
  ::unsetenv("DANCEMOE_API_KEY");
  const std::string body = R"({"prompt": "x", "max_tokens": 2})";
  check_error(n.post("/v1/completions", body), 401, "", "invalid_api_key");
  check_error(n.post("/v1/completions", body, "wrong"), 401, "", "invalid_api_key");
  CHECK(n.get("/v1/models").status == 401);
  CHECK(n.get("/v1/stats").status == 401);
  CHECK(n.post("/v1/completions", body, "sesame-123").status == 200);
  CHECK(n.get("/v1/models", "sesame-123").status == 200);
  CHECK(n.get("/health").status == 200);
  CHECK(n.get("/metrics").status == 200);

  OpenAiTestNode flag({"--api-key", "from-flag"});
  CHECK(flag.post("/v1/completions", body).status == 401);
  CHECK(flag.post("/v1/completions", body, "from-flag").status == 200);
}

TEST_CASE("openai api: a non-loopback address without a key is warned about") {
  OpenAiTestNode open({}, "tiny", "0.0.0.0:0");
  CHECK(open.node().process().log().find("no --api-key") != std::string::npos);
  OpenAiTestNode keyed({"--api-key", "k"}, "tiny", "0.0.0.0:0");
  CHECK(keyed.node().process().log().find("no --api-key") == std::string::npos);
  OpenAiTestNode local;
  CHECK(local.node().process().log().find("no --api-key") == std::string::npos);
}

TEST_CASE("openai api: /metrics counts requests, tokens, latency and node state") {
  OpenAiTestNode n;
  REQUIRE(n.post("/v1/completions",
                 R"({"prompt": "Hello", "max_tokens": 5, "temperature": 0, "ignore_eos": true})")
              .status == 200);
  REQUIRE(n.post("/v1/completions", R"({"prompt": "x", "top_p": 5})").status == 400);
  CHECK(n.metric_is(R"(dancemoe_http_requests_total{endpoint="/v1/completions",status="200"})", 1));
  CHECK(n.metric_is(R"(dancemoe_http_requests_total{endpoint="/v1/completions",status="400"})", 1));
  CHECK(n.metric(R"(dancemoe_http_generated_tokens_total{endpoint="/v1/completions"})") == 5);
  CHECK(n.metric(
            R"(dancemoe_http_time_to_first_token_seconds_count{endpoint="/v1/completions"})") == 1);
  CHECK(n.metric(R"(dancemoe_http_request_duration_seconds_count{endpoint="/v1/completions"})") ==
        1);
  CHECK(
      n.metric(
          R"(dancemoe_http_request_duration_seconds_bucket{endpoint="/v1/completions",le="+Inf"})") ==
      1);
  CHECK(n.metric("dancemoe_node_local_hit_ratio") == 1);  // it holds every expert
  CHECK(n.metric(R"(dancemoe_node_activations_total{served="local"})") > 0);
  CHECK(n.metric(R"(dancemoe_node_activations_total{served="remote"})") == 0);
  CHECK(n.metric("dancemoe_node_experts_resident") > 0);
  CHECK(n.metric("dancemoe_node_placement_version") == 1);
  CHECK(n.metric(R"(dancemoe_node_migration_state{state="idle"})") >= 0);
  const std::string text = n.get("/metrics").raw;
  CHECK(text.find("# TYPE dancemoe_node_remote_call_seconds histogram") != std::string::npos);
  CHECK(text.find("# TYPE dancemoe_node_remote_wire_bytes_total counter") != std::string::npos);
  CHECK(text.find("Hello") == std::string::npos);  // never a prompt in a label
}

}  // namespace dancemoe::testing
