#include "common/model/checkpoint.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/model/safetensors.h"
#include "common/model/safetensors_writer.h"
#include "kernels/cpu/numeric.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

namespace fs = std::filesystem;

struct RawTensor {
  TensorSpec spec;
  std::vector<uint8_t> bytes;
};

std::vector<RawTensor> read_all(const fs::path& file) {
  auto header = read_safetensors_header(file);
  REQUIRE(header.is_ok());
  std::ifstream in(file, std::ios::binary);
  std::vector<RawTensor> out;
  for (const SafetensorsTensor& t : header->tensors) {
    RawTensor raw{{t.name, t.dtype, t.shape}, std::vector<uint8_t>(t.n_bytes())};
    in.seekg(static_cast<std::streamoff>(header->data_offset + t.data_begin));
    in.read(reinterpret_cast<char*>(raw.bytes.data()), static_cast<std::streamsize>(t.n_bytes()));
    out.push_back(std::move(raw));
  }
  return out;
}

void write_all(const fs::path& file, const std::vector<RawTensor>& tensors) {
  std::vector<TensorSpec> specs;
  for (const RawTensor& t : tensors) specs.push_back(t.spec);
  Status s = write_safetensors(file, specs, [&](size_t i, std::span<uint8_t> dst) {
    std::copy(tensors[i].bytes.begin(), tensors[i].bytes.end(), dst.begin());
  });
  REQUIRE(s.is_ok());
}

// Re-encodes every bf16 tensor of the model as `dtype` (exact for f32; for
// f16 exact for our value range except tiny magnitudes).
void convert_dtype(const fs::path& file, DType dtype) {
  std::vector<RawTensor> tensors = read_all(file);
  for (RawTensor& t : tensors) {
    const size_t n = t.bytes.size() / 2;
    std::vector<uint8_t> out(n * dtype_size_bytes(dtype));
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, t.bytes.data() + 2 * i, 2);
      const float f = kernels::bf16_to_float(h);
      if (dtype == DType::kF32) {
        std::memcpy(out.data() + 4 * i, &f, 4);
      } else {
        const _Float16 half = static_cast<_Float16>(f);
        std::memcpy(out.data() + 2 * i, &half, 2);
      }
    }
    t.spec.dtype = dtype;
    t.bytes = std::move(out);
  }
  write_all(file, tensors);
}

SyntheticModelSpec tiny_spec(const std::string& arch = "qwen3_moe") {
  SyntheticModelSpec spec;
  spec.arch = arch;
  spec.preset = "tiny";
  spec.seed = 3;
  spec.write_tokenizer = false;
  return spec;
}

std::vector<float> prompt_logits(const fs::path& dir) {
  auto model = testing::open_model(dir);
  auto cache = model->transformer().new_cache(16);
  REQUIRE(cache.is_ok());
  std::vector<float> logits;
  const std::vector<int32_t> ids = {5, 100, 42, 7, 300};
  REQUIRE(model->transformer().forward(ids, *cache, LogitsMode::kAll, &logits).is_ok());
  return logits;
}

void check_open_error(const fs::path& dir, const std::string& fragment) {
  auto r = Checkpoint::open(dir);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  CHECK(r.status().message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("checkpoint: sharded and single-file checkpoints load the same model") {
  testing::TempDir single("single"), sharded("sharded");
  testing::write_model(tiny_spec(), single.path());
  SyntheticModelSpec spec = tiny_spec();
  spec.n_shards = 3;
  testing::write_model(spec, sharded.path());
  REQUIRE(fs::exists(sharded.path() / "model.safetensors.index.json"));
  auto a = Checkpoint::open(single.path());
  auto b = Checkpoint::open(sharded.path());
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK((*b)->files().size() == 3);
  CHECK((*a)->model_id() == (*b)->model_id());
  CHECK((*a)->total_bytes() == (*b)->total_bytes());
  CHECK(testing::max_abs_diff(prompt_logits(single.path()), prompt_logits(sharded.path())) == 0.0f);
}

TEST_CASE("checkpoint: sizes are exact and the model id is stable but config-sensitive") {
  testing::TempDir dir("sizes");
  testing::write_model(tiny_spec(), dir.path());
  auto ckpt = Checkpoint::open(dir.path());
  REQUIRE(ckpt.is_ok());
  // tiny qwen3: hidden 64, moe_intermediate 32, bf16: 3 matrices of 32 x 64.
  CHECK((*ckpt)->expert_bytes(0, 0) == 3 * 32 * 64 * 2);
  uint64_t file_bytes = fs::file_size(dir.path() / "model.safetensors");
  CHECK((*ckpt)->total_bytes() < file_bytes);
  CHECK((*ckpt)->total_bytes() > file_bytes - 64 * 1024);  // all but the header
  const std::string id = (*ckpt)->model_id();
  CHECK(id.size() == 32);
  CHECK(Checkpoint::open(dir.path()).value()->model_id() == id);

  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir.path() / "config.json"));
  config["rope_theta"] = 5000.0;
  std::ofstream(dir.path() / "config.json") << config.dump(1);
  CHECK(Checkpoint::open(dir.path()).value()->model_id() != id);
}

TEST_CASE("checkpoint: bf16, f16 and f32 checkpoints of the same values agree") {
  testing::TempDir bf16("bf16"), f16("f16"), f32("f32");
  for (const auto* dir : {&bf16, &f16, &f32})
    testing::write_model(tiny_spec("mixtral"), dir->path());
  convert_dtype(f32.path() / "model.safetensors", DType::kF32);
  convert_dtype(f16.path() / "model.safetensors", DType::kF16);
  // Other bytes: the bf16 model's expert manifest no longer applies to them.
  for (const auto* dir : {&f16, &f32}) fs::remove(dir->path() / ExpertManifest::kFileName);
  const std::vector<float> reference = prompt_logits(bf16.path());
  CHECK(testing::max_abs_diff(reference, prompt_logits(f32.path())) < 1e-5f);
  CHECK(testing::max_abs_diff(reference, prompt_logits(f16.path())) < 1e-3f);
}

TEST_CASE("checkpoint: a missing or mis-shaped tensor is named in the error") {
  testing::TempDir dir("missing");
  testing::write_model(tiny_spec(), dir.path());
  const fs::path file = dir.path() / "model.safetensors";
  std::vector<RawTensor> tensors = read_all(file);
  std::vector<RawTensor> without;
  for (RawTensor& t : tensors) {
    if (t.spec.name != "model.layers.2.mlp.experts.5.up_proj.weight") without.push_back(t);
  }
  write_all(file, without);
  check_open_error(dir.path(),
                   "tensor 'model.layers.2.mlp.experts.5.up_proj.weight' required by "
                   "config.json (Qwen3MoeForCausalLM) is missing");

  write_all(file, tensors);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir.path() / "config.json"));
  config["moe_intermediate_size"] = 16;
  std::ofstream(dir.path() / "config.json") << config.dump(1);
  check_open_error(dir.path(), "has shape [32, 64], but config.json implies [16, 64]");
}

TEST_CASE("checkpoint: bad directories, truncated files and hostile indexes are refused") {
  testing::TempDir dir("bad");
  check_open_error(dir.path() / "nope", "model directory does not exist");
  testing::write_model(tiny_spec(), dir.path());
  const fs::path file = dir.path() / "model.safetensors";
  const auto size = fs::file_size(file);
  fs::resize_file(file, size - 100);
  check_open_error(dir.path(), "past the data section");

  fs::remove(file);
  check_open_error(dir.path(), "no model.safetensors or model.safetensors.index.json");

  std::ofstream(dir.path() / "model.safetensors.index.json")
      << R"({"weight_map": {"model.embed_tokens.weight": "../../etc/passwd"}})";  // lint: path-ok
  check_open_error(dir.path(), "expected a file name in the model directory");

  std::ofstream(dir.path() / "model.safetensors.index.json") << R"({"weight_map": 3})";
  check_open_error(dir.path(), "'weight_map': expected an object");

  fs::remove(dir.path() / "config.json");
  check_open_error(dir.path(), "config.json: cannot open file");
}

TEST_CASE("checkpoint: an index that names a tensor its shard lacks is refused") {
  testing::TempDir dir("index");
  SyntheticModelSpec spec = tiny_spec();
  spec.n_shards = 2;
  testing::write_model(spec, dir.path());
  const fs::path index_path = dir.path() / "model.safetensors.index.json";
  nlohmann::json index = nlohmann::json::parse(std::ifstream(index_path));
  index["weight_map"]["model.ghost.weight"] = "model-00001-of-00002.safetensors";
  std::ofstream(index_path) << index.dump();
  check_open_error(dir.path(),
                   "weight_map says 'model.ghost.weight' is in "
                   "model-00001-of-00002.safetensors, but that file has no such tensor");
}

}  // namespace dancemoe
