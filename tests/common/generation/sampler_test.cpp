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
