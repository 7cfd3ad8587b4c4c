// Golden test: the tiny Qwen3-MoE (plain, and tied + no top-k renorm) and
// tiny Mixtral checkpoints against logits from an independent PyTorch
// implementation (tests/fixtures/golden/reference_forward.py), in f32
// compute: full-prompt forward, token-by-token decode and 32 greedy steps.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/tensor/npy.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

using testing::max_abs_diff;

constexpr float kTolerance = 1e-3f;

struct Golden {
  std::string name;
  SyntheticModelSpec spec;
};

std::vector<Golden> goldens() {
  std::vector<Golden> out(3);
  out[0].name = "qwen3_moe_tiny";
  out[0].spec.arch = "qwen3_moe";
  out[1].name = "qwen3_moe_tiny_tied";
  out[1].spec.arch = "qwen3_moe";
  out[1].spec.tie_word_embeddings = true;
  out[1].spec.norm_topk_prob = false;
  out[2].name = "mixtral_tiny";
  out[2].spec.arch = "mixtral";
  for (Golden& g : out) {
    g.spec.preset = "tiny";
    g.spec.seed = 7;
    g.spec.write_tokenizer = false;
  }
  return out;
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace

TEST_CASE("golden: tiny models match the independent PyTorch reference in f32") {
  for (const Golden& golden : goldens()) {
    CAPTURE(golden.name);
    const auto dir = testing::source_dir() / "tests/fixtures/golden" / golden.name;
    nlohmann::json meta = nlohmann::json::parse(std::ifstream(dir / "meta.json"));
    auto prompt_logits = read_npy_f32(dir / "prompt_logits.npy");
    auto step_logits = read_npy_f32(dir / "step_logits.npy");
    REQUIRE(prompt_logits.is_ok());
    REQUIRE(step_logits.is_ok());
    const std::vector<int32_t> prompt = meta["prompt_ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> greedy = meta["greedy_tokens"].get<std::vector<int32_t>>();

    testing::TempDir tmp("golden");
    testing::write_model(golden.spec, tmp.path());
    auto model = testing::open_model(tmp.path());
    // A generator change would make every comparison below fail obscurely.
    REQUIRE_MESSAGE(model->checkpoint().model_id() == meta["model_id"].get<std::string>(),
                    "the synthetic model no longer matches the one the goldens were made from; "
                    "run tests/fixtures/golden/regenerate.sh");
    Transformer& tf = model->transformer();
    const int64_t vocab = tf.config().vocab_size;

    {  // the full prompt in one forward
      auto cache = tf.new_cache(64);
      REQUIRE(cache.is_ok());
      std::vector<float> logits;
      REQUIRE(tf.forward(prompt, *cache, LogitsMode::kAll, &logits).is_ok());
      const float err = max_abs_diff(logits, prompt_logits->data);
      MESSAGE(golden.name, " prompt max abs error ", err);
      CHECK(err <= kTolerance);
    }
    {  // token by token with the KV cache, then 32 greedy steps
      auto cache = tf.new_cache(64);
      REQUIRE(cache.is_ok());
      std::vector<float> logits;
      float worst = 0.0f;
      for (size_t t = 0; t < prompt.size(); ++t) {
        REQUIRE(tf.forward(std::span(&prompt[t], 1), *cache, LogitsMode::kLast, &logits).is_ok());
        worst = std::max(
            worst, max_abs_diff(logits, std::span(prompt_logits->data).subspan(t * vocab, vocab)));
      }
      std::vector<int32_t> generated;
      for (size_t step = 0; step < greedy.size(); ++step) {
        worst = std::max(
            worst, max_abs_diff(logits, std::span(step_logits->data).subspan(step * vocab, vocab)));
        const int32_t next = argmax(logits);
        generated.push_back(next);
        REQUIRE(tf.forward(std::span(&next, 1), *cache, LogitsMode::kLast, &logits).is_ok());
      }
      MESSAGE(golden.name, " decode max abs error ", worst);
      CHECK(worst <= kTolerance);
      CHECK(generated == greedy);
    }
  }
}

}  // namespace dancemoe
