// Golden test: a tiny checkpoint of each family (and of each RoPE scaling
// type, Mixtral's sliding window, DeepSeek-V2's grouped routing, gpt-oss) against
// logits from an independent PyTorch implementation
// (tests/fixtures/golden/reference_forward.py), in f32 compute: full-prompt
// forward, token-by-token decode and 32 greedy steps; and decoding with the
// KV cache against re-running the whole prefix in this runtime.
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

// The tiny model of each golden, as tests/fixtures/golden/regenerate.sh
// makes it (make-model --preset tiny --seed 7 --no-tokenizer + these).
std::vector<Golden> goldens() {
  using Sets = std::vector<std::pair<std::string, std::string>>;
  auto golden = [](std::string name, std::string arch, Sets sets = {}) {
    Golden g;
    g.name = std::move(name);
    g.spec.arch = std::move(arch);
    g.spec.config_overrides = std::move(sets);
    g.spec.preset = "tiny";
    g.spec.seed = 7;
    g.spec.write_tokenizer = false;
    return g;
  };
  std::vector<Golden> out;
  out.push_back(golden("qwen3_moe_tiny", "qwen3_moe"));
  out.push_back(golden("qwen3_moe_tiny_tied", "qwen3_moe"));
  out.back().spec.tie_word_embeddings = true;
  out.back().spec.norm_topk_prob = false;
  out.push_back(golden("mixtral_tiny", "mixtral"));
  // Mistral's sliding window, shorter than the prompt.
  out.push_back(golden("mixtral_tiny_sliding", "mixtral", {{"sliding_window", "6"}}));
  // RoPE scaling, each type (positions reach 48, so the scaled low
  // frequencies matter).
  out.push_back(golden("qwen3_moe_tiny_linear", "qwen3_moe",
                       {{"rope_scaling", R"({"rope_type": "linear", "factor": 4.0})"}}));
  out.push_back(golden("qwen3_moe_tiny_yarn", "qwen3_moe",
                       {{"rope_scaling", R"({"rope_type": "yarn", "factor": 8.0,
                          "original_max_position_embeddings": 64})"}}));
  out.push_back(golden("qwen3_moe_tiny_llama3", "qwen3_moe",
                       {{"rope_scaling", R"({"rope_type": "llama3", "factor": 8.0,
                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 64})"}}));
  out.push_back(golden("olmoe_tiny", "olmoe"));
  out.push_back(golden("qwen2_moe_tiny", "qwen2_moe"));
  out.push_back(golden("deepseek_v2_tiny", "deepseek_v2"));  // V2-Lite's layout
  // DeepSeek-V2's: q through q_lora_rank, group-limited greedy routing, scaling.
  out.push_back(golden("deepseek_v2_tiny_grouped", "deepseek_v2",
                       {{"q_lora_rank", "24"},
                        {"topk_method", "\"group_limited_greedy\""},
                        {"n_group", "4"},
                        {"topk_group", "2"},
                        {"routed_scaling_factor", "16.0"}}));
  out.push_back(golden("deepseek_v3_tiny", "deepseek_v3"));
  out.push_back(golden("glm4_moe_tiny", "glm4_moe"));
  // Sinks, alternating sliding (window 8) and full layers, YaRN, the router
  // bias, clamped SwiGLU experts with biases as published MXFP4 blocks.
  out.push_back(golden("gpt_oss_tiny", "gpt_oss"));
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

TEST_CASE("golden: decoding with the KV cache equals re-running the whole prefix") {
  for (const Golden& golden : goldens()) {
    CAPTURE(golden.name);
    const auto dir = testing::source_dir() / "tests/fixtures/golden" / golden.name;
    nlohmann::json meta = nlohmann::json::parse(std::ifstream(dir / "meta.json"));
    std::vector<int32_t> ids = meta["prompt_ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> greedy = meta["greedy_tokens"].get<std::vector<int32_t>>();
    ids.insert(ids.end(), greedy.begin(), greedy.begin() + 16);
    testing::TempDir tmp("rerun");
    testing::write_model(golden.spec, tmp.path());
    auto model = testing::open_model(tmp.path());
    Transformer& tf = model->transformer();
    const int64_t vocab = tf.config().vocab_size;
    std::vector<float> all;
    {
      auto cache = tf.new_cache(64);
      REQUIRE(cache.is_ok());
      REQUIRE(tf.forward(ids, *cache, LogitsMode::kAll, &all).is_ok());
    }
    // A prefix in one batch, then the rest one token at a time (a latent
    // attention model switches from its expanded to its absorbed path).
    auto cache = tf.new_cache(64);
    REQUIRE(cache.is_ok());
    std::vector<float> logits;
    const size_t prefix = 5;
    REQUIRE(tf.forward(std::span(ids).first(prefix), *cache, LogitsMode::kLast, &logits).is_ok());
    float worst = max_abs_diff(logits, std::span(all).subspan((prefix - 1) * vocab, vocab));
    for (size_t t = prefix; t < ids.size(); ++t) {
      REQUIRE(tf.forward(std::span(&ids[t], 1), *cache, LogitsMode::kLast, &logits).is_ok());
      worst = std::max(worst, max_abs_diff(logits, std::span(all).subspan(t * vocab, vocab)));
    }
    MESSAGE(golden.name, " cached decode vs re-run max abs difference ", worst);
    CHECK(worst <= 1e-4f);
  }
}

}  // namespace dancemoe
