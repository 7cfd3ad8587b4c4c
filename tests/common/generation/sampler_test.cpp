#include "common/generation/sampler.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "common/generation/stop_matcher.h"

namespace dancemoe {

TEST_CASE("sampler: greedy picks the argmax") {
  Sampler s(SamplingParams{});
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  CHECK(s.sample(logits) == 1);
}

TEST_CASE("sampler: the same seed reproduces the same tokens and top_k limits the choice") {
  const std::vector<float> logits = {1.0f, 1.1f, 0.9f, 1.05f, -5.0f, 0.0f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 42;
  Sampler a(p), b(p);
  std::vector<int32_t> sa, sb;
  for (int i = 0; i < 50; ++i) {
    sa.push_back(a.sample(logits));
    sb.push_back(b.sample(logits));
  }
  CHECK(sa == sb);
  p.top_k = 2;
  Sampler k(p);
  for (int i = 0; i < 200; ++i) {
    const int32_t t = k.sample(logits);
    CHECK((t == 1 || t == 3));
  }
}

TEST_CASE("sampler: top_p keeps the smallest set reaching p and frequencies follow the softmax") {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.75f;  // {0.5, 0.3} reach 0.8 >= 0.75
  p.seed = 7;
  Sampler s(p);
  std::map<int32_t, int> counts;
  for (int i = 0; i < 4000; ++i) ++counts[s.sample(logits)];
  CHECK(counts[2] == 0);
  CHECK(static_cast<double>(counts[0]) / 4000 == doctest::Approx(0.625).epsilon(0.06));
}

TEST_CASE("sampler: invalid parameters name the field") {
  SamplingParams p;
  p.temperature = -1.0f;
  CHECK(p.validate().message().find("temperature") != std::string::npos);
  p = {};
  p.top_p = 0.0f;
  CHECK(p.validate().message().find("top_p") != std::string::npos);
  p = {};
  p.top_k = -3;
  CHECK(p.validate().message().find("top_k") != std::string::npos);
}

TEST_CASE("sampler: penalties and logit_bias change the row as OpenAI and vLLM define them") {
  SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.repetition_penalty = 2.0f;
  p.logit_bias = {{3, 10.0f}};
  Sampler s(p);
  const std::vector<int32_t> prompt = {0};
  s.set_prompt(prompt);
  s.accept(1);
  s.accept(1);
  s.accept(2);
  std::vector<float> row = {4.0f, -2.0f, 1.0f, 0.0f, 5.0f};
  s.adjust(row);
  CHECK(row[0] == doctest::Approx(2.0f));                 // prompt only: repetition 4 / 2
  CHECK(row[1] == doctest::Approx(-4.0f - 0.5f - 0.5f));  // -2 * 2, presence, 2 x frequency
  CHECK(row[2] == doctest::Approx(0.5f - 0.5f - 0.25f));  // 1 / 2, presence, 1 x frequency
  CHECK(row[3] == doctest::Approx(10.0f));                // bias
  CHECK(row[4] == doctest::Approx(5.0f));                 // untouched
}

TEST_CASE("sampler: min_p drops unlikely tokens and masked tokens are never drawn") {
  const float inf = INFINITY;
  const std::vector<float> logits = {std::log(0.6f), std::log(0.35f), std::log(0.05f), -inf};
  SamplingParams p;
  p.temperature = 1.0f;
  p.min_p = 0.2f;  // keeps p >= 0.12
  p.seed = 3;
  Sampler s(p);
  for (int i = 0; i < 500; ++i) {
    const int32_t t = s.sample(logits);
    CHECK((t == 0 || t == 1));
  }
}

TEST_CASE("sampler: without cuts, a vocabulary's frequencies follow softmax(logit / T)") {
  // 1000 tokens past several blocks of the draw's walk: every fifth masked,
  // one NaN; the rest at logits whose probabilities at T = 0.5 are known.
  const float inf = INFINITY;
  std::vector<float> logits(1000, -inf);
  std::vector<double> weight(logits.size(), 0.0);
  double total = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (i % 5 == 0) continue;
    logits[i] = static_cast<float>((i * 37 % 101) / 50.0);
    weight[i] = std::exp(static_cast<double>(logits[i]) / 0.5);
    total += weight[i];
  }
  logits[3] = NAN;
  total -= weight[3];
  weight[3] = 0.0;
  SamplingParams p;
  p.temperature = 0.5f;
  p.seed = 11;
  Sampler s(p);
  const int n_draws = 200000;
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n_draws; ++i) ++counts[static_cast<size_t>(s.sample(logits))];
  double chi2 = 0.0;  // over the drawable tokens
  int cells = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (weight[i] == 0.0) {
      CHECK(counts[i] == 0);  // masked or NaN: never drawn
      continue;
    }
    const double expected = n_draws * weight[i] / total;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    ++cells;
  }
  // 798 degrees of freedom: mean 798, sd 40; 1000 is five sd out.
  CHECK(cells == 799);
  CHECK(chi2 < 1000.0);
  // The same seed draws the same tokens.
  Sampler a(p), b(p);
  for (int i = 0; i < 100; ++i) CHECK(a.sample(logits) == b.sample(logits));
}

TEST_CASE("sampler: the new parameters are validated with their names and ranges") {
  SamplingParams p;
  p.presence_penalty = 2.5f;
  CHECK(p.validate().message().find("presence_penalty must be in [-2, 2]") != std::string::npos);
  p = {};
  p.frequency_penalty = -3.0f;
  CHECK(p.validate().message().find("frequency_penalty") != std::string::npos);
  p = {};
  p.repetition_penalty = 0.0f;
  CHECK(p.validate().message().find("repetition_penalty must be in (0, 10]") != std::string::npos);
  p = {};
  p.min_p = 1.5f;
  CHECK(p.validate().message().find("min_p") != std::string::npos);
  p = {};
  p.logit_bias = {{5, 101.0f}};
  CHECK(p.validate().message().find("logit_bias: the bias of token 5") != std::string::npos);
  p.logit_bias = {{5, 100.0f}};
  CHECK(p.validate().is_ok());
}

TEST_CASE("stop matcher: holds back possible stop prefixes and cuts at the stop") {
  StopMatcher m({"\nUser:", "###"});
  CHECK(m.push("Hello") == "Hello");
  CHECK(m.push(" wor") == " wor");
  CHECK(m.push("ld\nUs") == "ld");  // "\nUs" might start "\nUser:"
  CHECK(m.push("e") == "");
  CHECK(m.push("r: more") == "");
  CHECK(m.stopped());
  CHECK(m.flush().empty());

  StopMatcher n({"###"});
  CHECK(n.push("a#") == "a");
  CHECK(n.push("b") == "#b");  // not a stop after all
  CHECK(n.push("##") == "");
  CHECK(n.flush() == "##");
}

}  // namespace dancemoe
