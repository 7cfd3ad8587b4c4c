#include "common/model/split/split_writer.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/inference/kv_cache.h"
#include "common/model/gguf/gguf_quantize.h"
#include "common/model/split/split_index.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::unique_ptr<Checkpoint> open_ok(const fs::path& dir) {
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(dir);
  REQUIRE_MESSAGE(ckpt.is_ok(), ckpt.status().to_string());
  return std::move(ckpt).value();
}

SplitSummary split_ok(const Checkpoint& source, const fs::path& out, SplitOptions options = {}) {
  Result<SplitSummary> s = write_split(source, out, options);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
  return *s;
}

std::vector<float> written_model_logits(const fs::path& dir) {
  auto model = testing::open_model(dir);
  Transformer& tf = model->transformer();
  auto cache = tf.new_cache(32);
  REQUIRE(cache.is_ok());
  const std::vector<int32_t> prompt = {1, 7, 42, 3, 99, 12};
  std::vector<float> logits;
  REQUIRE(tf.forward(prompt, *cache, LogitsMode::kAll, &logits).is_ok());
  return logits;
}

int64_t count_files(const fs::path& dir) {
  int64_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.is_regular_file() ? 1 : 0;
  return n;
}

TEST_CASE("split: a split checkpoint has its source's model id, sizes and logits") {
  TempDir tmp("split");
  testing::write_model(testing::tiny_spec(3), tmp.path() / "hf");
  auto source = open_ok(tmp.path() / "hf");
  const SplitSummary summary = split_ok(*source, tmp.path() / "split");
  const ModelConfig& c = source->config();
  CHECK(summary.n_expert_files == c.n_moe_layers() * c.n_experts);
  CHECK(summary.model_id == source->model_id());
  auto split = open_ok(tmp.path() / "split");
  CHECK(split->is_split());
  CHECK(split->has_dense_weights());
  CHECK(split->model_id() == source->model_id());
  CHECK(split->dense_bytes() == source->dense_bytes());
  CHECK(split->total_bytes() == source->total_bytes());
  CHECK(split->expert_digests() != nullptr);
  CHECK(count_files(tmp.path() / "split" / "experts") == summary.n_expert_files);
  CHECK(testing::max_abs_diff(written_model_logits(tmp.path() / "hf"),
                              written_model_logits(tmp.path() / "split")) == 0.0f);
}

TEST_CASE("split: experts missing from disk are known by size and digest but not readable") {
  TempDir tmp("split-partial");
  testing::write_model(testing::tiny_spec(4), tmp.path() / "hf");
  auto source = open_ok(tmp.path() / "hf");
  split_ok(*source, tmp.path() / "split");
  const ExpertRef gone{2, 3};  // layer 1 of the tiny model is dense
  REQUIRE(fs::remove(tmp.path() / "split" / "experts" / ExpertFiles::file_name(gone)));
  auto split = open_ok(tmp.path() / "split");
  CHECK_FALSE(split->has_expert_weights(gone));
  CHECK(split->has_expert_weights({2, 2}));
  CHECK(split->expert_bytes(2, 3) == source->expert_bytes(2, 3));
  CHECK(split->expert_digests()->find(gone) != nullptr);
  std::vector<uint8_t> bytes(split->tensor(TensorRole::kExpertGate, 2, 3).n_bytes);
  const Status read =
      split->read_tensor(split->tensor(TensorRole::kExpertGate, 2, 3), bytes.data());
  CHECK(read.code() == StatusCode::kNotFound);
  CHECK(read.message().find("L0002-E0003.bin") != std::string::npos);

  // A store over it loads what is there and names the file of what is not.
  ExpertStore store(*split);
  CHECK(store.load({2, 2}).is_ok());
  const Status missing = store.load(gone);
  CHECK_FALSE(missing.is_ok());
  CHECK(missing.message().find("L0002-E0003.bin") != std::string::npos);
}

TEST_CASE("split: an expert file of the wrong size or digest is refused, naming the file") {
  TempDir tmp("split-bad");
  testing::write_model(testing::tiny_spec(5), tmp.path() / "hf");
  auto source = open_ok(tmp.path() / "hf");
  split_ok(*source, tmp.path() / "split");
  const fs::path experts = tmp.path() / "split" / "experts";
  fs::resize_file(experts / "L0000-E0001.bin", 100);  // truncated
  {
    std::fstream f(experts / "L0000-E0002.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x5a');
    f.put('\x5b');  // same size, other bytes
  }
  auto split = open_ok(tmp.path() / "split");
  CHECK_FALSE(split->has_expert_weights({0, 1}));
  ExpertStore store(*split);
  const Status truncated = store.load({0, 1});
  CHECK(truncated.code() == StatusCode::kInvalidArgument);
  CHECK(truncated.message().find("L0000-E0001.bin") != std::string::npos);
  CHECK(truncated.message().find("has 100 bytes") != std::string::npos);
  const Status corrupt = store.load({0, 2});
  CHECK(corrupt.code() == StatusCode::kInvalidArgument);
  CHECK(corrupt.message().find("L0000-E0002.bin") != std::string::npos);
  CHECK(corrupt.message().find("SHA-256") != std::string::npos);
  CHECK(store.load({0, 3}).is_ok());
}

TEST_CASE("split: a header-only copy opens with the model id and no weights") {
  TempDir tmp("split-headers");
  testing::write_model(testing::tiny_spec(6), tmp.path() / "hf");
  auto source = open_ok(tmp.path() / "hf");
  SplitOptions options;
  options.headers_only = true;
  const SplitSummary summary = split_ok(*source, tmp.path() / "headers", options);
  CHECK(summary.n_expert_files == 0);
  CHECK_FALSE(fs::exists(tmp.path() / "headers" / SplitIndex::kDenseFile));
  auto headers = open_ok(tmp.path() / "headers");
  CHECK(headers->model_id() == source->model_id());
  CHECK_FALSE(headers->has_dense_weights());
  CHECK(headers->expert_bytes(0, 0) == source->expert_bytes(0, 0));
  std::vector<uint8_t> bytes(headers->tensor(TensorRole::kEmbed).n_bytes);
  const Status read = headers->read_tensor(headers->tensor(TensorRole::kEmbed), bytes.data());
  CHECK(read.code() == StatusCode::kFailedPrecondition);
  CHECK(read.message().find("header-only") != std::string::npos);
  RuntimeOptions runtime;
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(tmp.path() / "headers", runtime);
  CHECK_FALSE(model.is_ok());
  CHECK(model.status().message().find("header-only") != std::string::npos);
  // A header-only copy of a split of a source without a manifest still has digests.
  split_ok(*source, tmp.path() / "split");
  auto again = open_ok(tmp.path() / "split");
  split_ok(*again, tmp.path() / "headers2", options);
  CHECK(open_ok(tmp.path() / "headers2")->model_id() == source->model_id());
}

TEST_CASE("split: a split directory missing a file, or with a bad index, is refused by name") {
  TempDir tmp("split-missing");
  testing::write_model(testing::tiny_spec(7), tmp.path() / "hf");
  auto source = open_ok(tmp.path() / "hf");
  split_ok(*source, tmp.path() / "split");
  const fs::path split = tmp.path() / "split";
  fs::copy(split, tmp.path() / "no-dense", fs::copy_options::recursive);
  fs::remove(tmp.path() / "no-dense" / SplitIndex::kDenseFile);
  Result<std::unique_ptr<Checkpoint>> no_dense = Checkpoint::open(tmp.path() / "no-dense");
  CHECK(no_dense.status().code() == StatusCode::kNotFound);
  CHECK(no_dense.status().message().find("dense.bin") != std::string::npos);

  fs::copy(split, tmp.path() / "short", fs::copy_options::recursive);
  fs::resize_file(tmp.path() / "short" / SplitIndex::kDenseFile, 64);
  Result<std::unique_ptr<Checkpoint>> short_dense = Checkpoint::open(tmp.path() / "short");
  CHECK(short_dense.status().message().find("dense.bin: has 64 bytes") != std::string::npos);

  fs::copy(split, tmp.path() / "no-config", fs::copy_options::recursive);
  fs::remove(tmp.path() / "no-config" / "config.json");
  CHECK(Checkpoint::open(tmp.path() / "no-config").status().message().find("config.json") !=
        std::string::npos);

  fs::copy(split, tmp.path() / "bad-index", fs::copy_options::recursive);
  {
    std::ifstream in(split / SplitIndex::kFileName);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find("\"bytes\"");
    REQUIRE(at != std::string::npos);
    text.replace(at, 7, "\"bites\"");
    std::ofstream(tmp.path() / "bad-index" / SplitIndex::kFileName) << text;
  }
  const Status bad = Checkpoint::open(tmp.path() / "bad-index").status();
  CHECK(bad.code() == StatusCode::kInvalidArgument);
  CHECK(bad.message().find("dancemoe-split.json") != std::string::npos);
  CHECK(bad.message().find("bytes") != std::string::npos);

  // A config edited after the split is another model.
  fs::copy(split, tmp.path() / "edited", fs::copy_options::recursive);
  {
    std::ifstream in(split / "config.json");
    nlohmann::json config = nlohmann::json::parse(in);
    config["rope_theta"] = 500000.0;
    std::ofstream(tmp.path() / "edited" / "config.json") << config.dump(1);
  }
  const Status edited = Checkpoint::open(tmp.path() / "edited").status();
  CHECK(edited.message().find("model_id") != std::string::npos);

  // --out must be new or empty.
  const Result<SplitSummary> again = write_split(*source, split);
  CHECK(again.status().code() == StatusCode::kInvalidArgument);
  SplitOptions force;
  force.force = true;
  CHECK(write_split(*source, split, force).is_ok());
}

TEST_CASE("split: a GGUF model splits into its blocks with digests and the same logits") {
  TempDir tmp("split-gguf");
  testing::write_model(testing::tiny_spec(8), tmp.path() / "hf");
  auto hf = open_ok(tmp.path() / "hf");
  gguf::QuantizeOptions quantize;
  quantize.mixture = gguf::Mixture::kQ8_0;
  REQUIRE(gguf::quantize_to_gguf(*hf, tmp.path() / "m.gguf", quantize).is_ok());
  auto source = open_ok(tmp.path() / "m.gguf");
  REQUIRE(source->expert_digests() == nullptr);  // a GGUF file carries none
  split_ok(*source, tmp.path() / "split");
  auto split = open_ok(tmp.path() / "split");
  CHECK(split->model_id() == source->model_id());
  CHECK(split->expert_type() == source->expert_type());
  CHECK(split->expert_bytes(0, 0) == source->expert_bytes(0, 0));
  REQUIRE(split->expert_digests() != nullptr);
  // The digest is of the quantized bytes a peer would send.
  ExpertStore store(*source);
  REQUIRE(store.load({2, 5}).is_ok());
  const ExpertWeights& w = *store.get({2, 5});
  auto span_of = [](const kernels::WeightView& v, const TensorLocation& t) {
    return std::span<const uint8_t>(static_cast<const uint8_t*>(v.data), t.n_bytes);
  };
  const Digest d = expert_digest(span_of(w.gate, source->tensor(TensorRole::kExpertGate, 2, 5)),
                                 span_of(w.up, source->tensor(TensorRole::kExpertUp, 2, 5)),
                                 span_of(w.down, source->tensor(TensorRole::kExpertDown, 2, 5)));
  CHECK(split->expert_digests()->check({2, 5}, d).is_ok());
  CHECK(testing::max_abs_diff(written_model_logits(tmp.path() / "m.gguf"),
                              written_model_logits(tmp.path() / "split")) == 0.0f);
}

}  // namespace
}  // namespace dancemoe
