#include "common/generation/generator.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "common/generation/json_schema_grammar.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

struct GeneratorFixture {
  testing::TempDir dir{"generator"};
  std::unique_ptr<ModelRuntime> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;

  GeneratorFixture() {
    SyntheticModelSpec spec;
    spec.preset = "tiny";
    spec.seed = 5;
    testing::write_model(spec, dir.path());
    model = testing::open_model(dir.path(), ComputePrecision::kBF16);
    auto loaded = tokenizer::Tokenizer::load(dir.path() / "tokenizer.json");
    REQUIRE(loaded.is_ok());
    tok = std::move(loaded).value();
  }

  Result<GenerationResult> run(const GenerationParams& params, std::vector<int32_t> eos,
                               const TextSink& sink = {}) {
    auto ids = tok->encode("The quick brown fox", false);
    REQUIRE(ids.is_ok());
    auto cache = model->transformer().new_cache(256);
    REQUIRE(cache.is_ok());
    Generator generator(model->transformer(), *tok, std::move(eos));
    return generator.generate(*ids, *cache, params, sink);
  }
};

}  // namespace

TEST_CASE("generator: max_tokens, streamed text and a seed that reproduces the output") {
  GeneratorFixture f;
  GenerationParams params;
  params.max_tokens = 20;
  params.sampling.temperature = 0.9f;
  params.sampling.seed = 99;
  std::string streamed;
  auto a = f.run(params, {}, [&](const TextDelta& delta) {
    streamed += delta.text;
    return true;
  });
  REQUIRE(a.is_ok());
  CHECK(a->tokens.size() == 20);
  CHECK(a->finish == FinishReason::kLength);
  CHECK(streamed == a->text);
  CHECK(a->text == f.tok->decode(a->tokens, true));
  auto b = f.run(params, {});
  REQUIRE(b.is_ok());
  CHECK(a->tokens == b->tokens);
}

TEST_CASE("generator: stops at an end-of-sequence token, which is not emitted") {
  GeneratorFixture f;
  GenerationParams params;
  params.max_tokens = 20;
  auto free_run = f.run(params, {});
  REQUIRE(free_run.is_ok());
  REQUIRE(free_run->tokens.size() == 20);
  const int32_t eos = free_run->tokens[5];  // greedy: the 6th token becomes "EOS"
  auto stopped = f.run(params, {eos});
  REQUIRE(stopped.is_ok());
  CHECK(stopped->finish == FinishReason::kStop);
  const auto first = std::find(free_run->tokens.begin(), free_run->tokens.end(), eos);
  CHECK(stopped->tokens == std::vector<int32_t>(free_run->tokens.begin(), first));
}

TEST_CASE("generator: a stop string ends generation and is never streamed") {
  GeneratorFixture f;
  GenerationParams params;
  params.max_tokens = 30;
  auto free_run = f.run(params, {});
  REQUIRE(free_run.is_ok());
  REQUIRE(free_run->text.size() > 12);
  const std::string stop = free_run->text.substr(8, 3);
  params.stop = {stop};
  std::string streamed;
  auto r = f.run(params, {}, [&](const TextDelta& delta) {
    streamed += delta.text;
    return true;
  });
  REQUIRE(r.is_ok());
  CHECK(r->finish == FinishReason::kStop);
  CHECK(streamed == free_run->text.substr(0, free_run->text.find(stop)));
  CHECK(streamed.find(stop) == std::string::npos);
}

TEST_CASE("generator: a consumer can cancel, and bad requests are errors") {
  GeneratorFixture f;
  GenerationParams params;
  params.max_tokens = 50;
  int pieces = 0;
  auto r = f.run(params, {}, [&](const TextDelta&) { return ++pieces < 3; });
  REQUIRE(r.is_ok());
  CHECK(r->finish == FinishReason::kCancelled);
  CHECK(r->tokens.size() < 50);

  params.sampling.top_p = 2.0f;
  CHECK(f.run(params, {}).status().message().find("top_p") != std::string::npos);
  params = {};
  params.max_tokens = 1000;
  CHECK(f.run(params, {}).status().message().find("exceed the context of 256 tokens") !=
        std::string::npos);
}

TEST_CASE("generator: logprobs come with the streamed text, one per token, raw and sorted") {
  GeneratorFixture f;
  GenerationParams params;
  params.max_tokens = 12;
  params.n_logprobs = 3;
  std::vector<TokenLogprobs> streamed;
  auto r = f.run(params, {}, [&](const TextDelta& delta) {
    streamed.insert(streamed.end(), delta.logprobs.begin(), delta.logprobs.end());
    return true;
  });
  REQUIRE(r.is_ok());
  REQUIRE(r->logprobs.size() == r->tokens.size());
  REQUIRE(streamed.size() == r->tokens.size());
  for (size_t i = 0; i < r->tokens.size(); ++i) {
    const TokenLogprobs& lp = r->logprobs[i];
    CHECK(lp.id == r->tokens[i]);
    CHECK(streamed[i].id == lp.id);
    REQUIRE(lp.top.size() == 3);
    CHECK(lp.top[0].id == lp.id);  // greedy: the chosen token is the most likely
    CHECK(lp.logprob == doctest::Approx(lp.top[0].logprob));
    CHECK(lp.top[0].logprob >= lp.top[1].logprob);
    CHECK(lp.top[1].logprob >= lp.top[2].logprob);
    CHECK(lp.logprob <= 0.0f);
  }
}

TEST_CASE("generator: a frequency penalty stops greedy repetition, logit_bias forces a token") {
  GeneratorFixture f;
  GenerationParams params;
  params.max_tokens = 24;
  auto plain = f.run(params, {});
  REQUIRE(plain.is_ok());
  const std::set<int32_t> distinct_plain(plain->tokens.begin(), plain->tokens.end());
  REQUIRE(distinct_plain.size() < plain->tokens.size());  // the tiny model repeats itself
  params.sampling.frequency_penalty = 2.0f;
  params.sampling.presence_penalty = 2.0f;
  auto penalised = f.run(params, {});
  REQUIRE(penalised.is_ok());
  const std::set<int32_t> distinct(penalised->tokens.begin(), penalised->tokens.end());
  CHECK(distinct.size() > distinct_plain.size());

  params = {};
  params.max_tokens = 5;
  const int32_t forced = plain->tokens[0] == 7 ? 8 : 7;
  params.sampling.logit_bias = {{forced, 100.0f}};
  auto biased = f.run(params, {});
  REQUIRE(biased.is_ok());
  CHECK(biased->tokens == std::vector<int32_t>(5, forced));
}

TEST_CASE("generator: a json_schema grammar makes even a random model write matching JSON") {
  GeneratorFixture f;
  const auto schema = nlohmann::ordered_json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 6},
      "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
      "ok": {"type": "boolean"}
    },
    "required": ["name", "age", "tags", "ok"],
    "additionalProperties": false
  })");
  auto grammar = json_schema_grammar(schema);
  REQUIRE(grammar.is_ok());
  for (float temperature : {0.0f, 1.0f}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      GenerationParams params;
      params.max_tokens = 200;
      params.sampling.temperature = temperature;
      params.sampling.seed = seed;
      params.grammar = std::make_shared<Grammar>(*grammar);
      auto r = f.run(params, {});
      REQUIRE(r.is_ok());
      INFO("output: " << r->text);
      CHECK(r->finish == FinishReason::kStop);
      const auto value = nlohmann::json::parse(r->text, nullptr, false);
      REQUIRE_FALSE(value.is_discarded());
      CHECK(value.size() == 4);
      CHECK(value["name"].is_string());
      CHECK(value["name"].get<std::string>().size() <= 6 * 4);
      CHECK(value["age"].is_number_integer());
      CHECK(value["age"].get<int64_t>() >= 0);
      CHECK(value["age"].get<int64_t>() <= 120);
      CHECK(value["tags"].size() <= 2);
      for (const auto& tag : value["tags"]) CHECK((tag == "a" || tag == "b"));
      CHECK(value["ok"].is_boolean());
    }
  }
}

}  // namespace dancemoe
