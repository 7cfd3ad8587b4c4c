#include "common/generation/generator.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

struct Fixture {
  testing::TempDir dir{"generator"};
  std::unique_ptr<ModelRuntime> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;

  Fixture() {
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
  Fixture f;
  GenerationParams params;
  params.max_tokens = 20;
  params.sampling.temperature = 0.9f;
  params.sampling.seed = 99;
  std::string streamed;
  auto a = f.run(params, {}, [&](std::string_view piece) {
    streamed += piece;
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
  Fixture f;
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
  Fixture f;
  GenerationParams params;
  params.max_tokens = 30;
  auto free_run = f.run(params, {});
  REQUIRE(free_run.is_ok());
  REQUIRE(free_run->text.size() > 12);
  const std::string stop = free_run->text.substr(8, 3);
  params.stop = {stop};
  std::string streamed;
  auto r = f.run(params, {}, [&](std::string_view piece) {
    streamed += piece;
    return true;
  });
  REQUIRE(r.is_ok());
  CHECK(r->finish == FinishReason::kStop);
  CHECK(streamed == free_run->text.substr(0, free_run->text.find(stop)));
  CHECK(streamed.find(stop) == std::string::npos);
}

TEST_CASE("generator: a consumer can cancel, and bad requests are errors") {
  Fixture f;
  GenerationParams params;
  params.max_tokens = 50;
  int pieces = 0;
  auto r = f.run(params, {}, [&](std::string_view) { return ++pieces < 3; });
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

}  // namespace dancemoe
