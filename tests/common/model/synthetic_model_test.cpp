#include "common/model/synthetic/synthetic_model.h"

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <map>

#include "common/model/checkpoint.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("synthetic model: the same seed writes the same bytes, another seed does not") {
  testing::TempDir a("seed-a"), b("seed-b"), c("seed-c");
  SyntheticModelSpec spec;
  spec.arch = "mixtral";
  spec.write_tokenizer = false;
  testing::write_model(spec, a.path());
  testing::write_model(spec, b.path());
  spec.seed = 2;
  testing::write_model(spec, c.path());
  CHECK(file_bytes(a.path() / "model.safetensors") == file_bytes(b.path() / "model.safetensors"));
  CHECK(file_bytes(a.path() / "model.safetensors") != file_bytes(c.path() / "model.safetensors"));
}

TEST_CASE("synthetic model: routing is not degenerate on the tiny presets") {
  for (std::string arch : {"qwen3_moe", "mixtral", "gpt_oss"}) {
    CAPTURE(arch);
    testing::TempDir dir("routing");
    SyntheticModelSpec spec;
    spec.arch = arch;
    spec.write_tokenizer = false;
    testing::write_model(spec, dir.path());
    auto model = testing::open_model(dir.path());
    std::map<int64_t, std::map<int32_t, int>> counts;  // layer -> expert -> routings
    model->transformer().set_routing_observer([&](int64_t layer, const RoutingDecision& r) {
      for (int32_t e : r.expert_ids) ++counts[layer][e];
    });
    std::vector<int32_t> prompt;
    for (int i = 0; i < 64; ++i) prompt.push_back((i * 37 + 11) % 512);
    auto cache = model->transformer().new_cache(64);
    std::vector<float> logits;
    REQUIRE(model->transformer().forward(prompt, *cache, LogitsMode::kLast, &logits).is_ok());
    for (const auto& [layer, per_expert] : counts) {
      int total = 0, most = 0;
      for (const auto& [e, n] : per_expert) {
        total += n;
        most = std::max(most, n);
      }
      CAPTURE(layer);
      CHECK(total == 64 * 2);
      CHECK(most <= total / 2);
      CHECK(per_expert.size() >= 6);  // most of the 8 experts are used
    }
  }
}

TEST_CASE("synthetic model: unknown presets and architectures are refused") {
  testing::TempDir dir("bad");
  SyntheticModelSpec spec;
  spec.preset = "huge";
  Status s = write_synthetic_model(spec, dir.path());
  CHECK(s.message().find("unknown --preset 'huge'") != std::string::npos);
  spec.preset = "tiny";
  spec.arch = "gpt2";
  s = write_synthetic_model(spec, dir.path());
  CHECK(s.message().find("unknown --arch 'gpt2'") != std::string::npos);
}

TEST_CASE("synthetic model: --arch takes the published hyphenated name (gpt-oss)") {
  testing::TempDir dir("gpt_oss_name");
  SyntheticModelSpec spec;
  spec.arch = "gpt-oss";
  spec.write_tokenizer = false;
  REQUIRE(write_synthetic_model(spec, dir.path()).is_ok());
  auto ckpt = Checkpoint::open(dir.path());
  REQUIRE(ckpt.is_ok());
  CHECK((*ckpt)->config().hf_architecture == "GptOssForCausalLM");
}

}  // namespace dancemoe
