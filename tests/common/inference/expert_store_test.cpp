#include "common/inference/expert_store.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/interleave.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {

TEST_CASE("expert store: load, hold and evict single experts with exact sizes") {
  testing::TempDir dir("store");
  SyntheticModelSpec spec;
  spec.preset = "tiny";
  spec.write_tokenizer = false;
  testing::write_model(spec, dir.path());
  auto ckpt = Checkpoint::open(dir.path());
  REQUIRE(ckpt.is_ok());
  ExpertStore store(**ckpt);
  CHECK(store.n_resident() == 0);
  CHECK(store.expert_bytes({0, 3}) == 3 * 32 * 64 * 2);

  REQUIRE(store.load({0, 3}).is_ok());
  REQUIRE(store.load({0, 3}).is_ok());  // idempotent
  CHECK(store.n_resident() == 1);
  CHECK(store.resident_bytes() == store.expert_bytes({0, 3}));
  auto held = store.get({0, 3});
  REQUIRE(held != nullptr);
  CHECK(held->gate.rows == 32);
  CHECK(held->down.cols == 32);

  CHECK(store.evict({0, 3}));
  CHECK_FALSE(store.evict({0, 3}));
  CHECK(store.get({0, 3}) == nullptr);
  CHECK(store.resident_bytes() == 0);
  CHECK(held->gate.data != nullptr);  // a user's reference keeps the weights alive

  // Layer 1 of the tiny Qwen3 preset is a dense (mlp_only) layer.
  Status s = store.load({1, 0});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("dense layer") != std::string::npos);
  CHECK(store.load({0, 8}).message().find("expert 8 is out of range [0, 8)") != std::string::npos);
  CHECK(store.load({9, 0}).message().find("layer 9 is out of range") != std::string::npos);

  REQUIRE(store.load_all().is_ok());
  CHECK(store.n_resident() == 3 * 8);  // 3 MoE layers of 4
  CHECK(store.resident_bytes() == (*ckpt)->total_bytes() - (*ckpt)->dense_bytes());
}

}  // namespace dancemoe

namespace dancemoe {
namespace {

// Records what the store tells a device with copies of its own (a GPU's
// ExpertResidency), and can refuse.
struct RecordingResidency final : ExpertResidency {
  Status make_resident(const std::shared_ptr<const ExpertWeights>& expert) override {
    if (refuse) return resource_exhausted("no slot left");
    arrived.push_back(expert->key);
    return Status::ok();
  }
  void release(const ExpertWeights& expert) override { left.push_back(expert.key); }
  bool refuse = false;
  std::vector<ExpertRef> arrived;
  std::vector<ExpertRef> left;
};

}  // namespace

TEST_CASE(
    "expert store: a device with copies of its own is told of arrivals, moves and evictions") {
  testing::TempDir dir("store-residency");
  testing::write_model(testing::tiny_spec(0), dir.path());
  auto ckpt = Checkpoint::open(dir.path());
  REQUIRE(ckpt.is_ok());
  ExpertStore store(**ckpt, {-1, -1});
  auto gpu = std::make_shared<RecordingResidency>();
  store.set_residency(1, gpu);
  REQUIRE(store.load({0, 2}, 0).is_ok());  // a CPU device: nothing to tell
  REQUIRE(store.load({0, 3}, 1).is_ok());
  REQUIRE(store.load({0, 3}, 1).is_ok());  // already there
  CHECK(gpu->arrived == std::vector<ExpertRef>{{0, 3}});
  REQUIRE(store.load({0, 2}, 1).is_ok());  // a move onto the GPU
  CHECK(gpu->arrived.size() == 2);
  REQUIRE(store.load({0, 3}, 0).is_ok());  // a move off it
  CHECK(gpu->left == std::vector<ExpertRef>{{0, 3}});
  CHECK(store.evict({0, 2}));
  CHECK(gpu->left.size() == 2);
  // A device that cannot take an expert fails the load; nothing is published.
  gpu->refuse = true;
  Status s = store.load({0, 5}, 1);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(store.get({0, 5}) == nullptr);
  CHECK(store.n_resident_by_device() == std::vector<int64_t>{1, 0});
}

TEST_CASE("expert store: weights that do not match the manifest never become resident") {
  testing::TempDir dir("store-manifest");
  SyntheticModelSpec spec;
  spec.preset = "tiny";
  spec.write_tokenizer = false;
  testing::write_model(spec, dir.path());
  auto ckpt = Checkpoint::open(dir.path());
  REQUIRE(ckpt.is_ok());
  REQUIRE((*ckpt)->manifest() != nullptr);  // make-model writes one
  const std::string id = (*ckpt)->model_id();

  // Tamper with one byte of expert 3 of layer 0 in the file: the headers,
  // and so the model id without a manifest, would not notice.
  const TensorLocation& up = (*ckpt)->tensor(TensorRole::kExpertUp, 0, 3);
  {
    std::FILE* f = std::fopen((*ckpt)->files()[up.file_index].c_str(), "r+b");
    REQUIRE(f != nullptr);
    std::fseek(f, static_cast<long>(up.file_offset + 10), SEEK_SET);
    const int byte = std::fgetc(f);
    std::fseek(f, static_cast<long>(up.file_offset + 10), SEEK_SET);
    std::fputc(byte ^ 0x40, f);
    std::fclose(f);
  }
  auto tampered = Checkpoint::open(dir.path());
  REQUIRE(tampered.is_ok());
  CHECK((*tampered)->model_id() == id);
  ExpertStore store(**tampered);
  Status loaded = store.load({0, 3});
  REQUIRE_FALSE(loaded.is_ok());
  CHECK(loaded.message().find("layer 0 expert 3") != std::string::npos);
  CHECK(loaded.message().find("manifest") != std::string::npos);
  CHECK_FALSE(store.is_resident({0, 3}));
  REQUIRE(store.load({0, 4}).is_ok());  // the others are fine

  // Bytes from elsewhere (a peer) are checked the same way.
  ExpertStore good(**ckpt);
  REQUIRE(good.load({0, 5}).is_ok());
  std::vector<uint8_t> bytes(store.expert_bytes({0, 5}));
  size_t at = 0;
  for (TensorRole role :
       {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
    const TensorLocation& t = (*ckpt)->tensor(role, 0, 5);
    REQUIRE((*ckpt)->read_tensor(t, bytes.data() + at).is_ok());
    at += t.n_bytes;
  }
  ExpertStore fresh(**ckpt);
  bytes[7] ^= 1;
  CHECK(fresh.install({0, 5}, bytes).message().find("manifest") != std::string::npos);
  bytes[7] ^= 1;
  CHECK(fresh.install({0, 5}, bytes).is_ok());

  // Without a manifest the checkpoint still loads (unverified), with another id.
  std::filesystem::remove(dir.path() / ExpertManifest::kFileName);
  auto bare = Checkpoint::open(dir.path());
  REQUIRE(bare.is_ok());
  CHECK((*bare)->manifest() == nullptr);
  CHECK((*bare)->model_id() != id);
  ExpertStore unverified(**bare);
  CHECK(unverified.load({0, 3}).is_ok());
}

}  // namespace dancemoe

namespace dancemoe {
namespace {

TEST_CASE("expert store: an interleaving store holds bf16 experts interleaved, rows in transfers") {
  // Forced on, whatever this CPU has: levels without the interleaved bf16
  // kernel compute such matrices through rows copies.
  testing::TempDir dir("store-bf16-interleaved");
  SyntheticModelSpec spec;
  spec.preset = "tiny";  // experts 32 x 64: two groups of 16 rows
  spec.write_tokenizer = false;
  testing::write_model(spec, dir.path());
  auto ckpt = Checkpoint::open(dir.path());
  REQUIRE(ckpt.is_ok());
  ExpertStore plain(**ckpt);
  ExpertFormat format;
  format.interleave_bf16 = true;
  ExpertStore interleaved(**ckpt, {-1}, format);
  const ExpertRef key{0, 3};
  REQUIRE(plain.load(key).is_ok());
  REQUIRE(interleaved.load(key).is_ok());
  const auto a = plain.get(key), b = interleaved.get(key);
  for (const kernels::WeightView* v : {&b->gate, &b->up, &b->down}) {
    CHECK(v->type == kernels::WeightType::kBF16);
    CHECK(v->layout == kernels::WeightLayout::kInterleaved16);
  }
  CHECK(a->gate.layout == kernels::WeightLayout::kRows);
  CHECK(b->n_bytes == a->n_bytes);
  const std::vector<uint8_t> bytes = testing::expert_rows_bytes(*b);
  CHECK(bytes == testing::expert_rows_bytes(*a));            // the checkpoint's bytes
  CHECK(std::memcmp(a->gate.data, b->gate.data, 256) != 0);  // not the same layout
  // A peer's rows install as interleaved again.
  REQUIRE(interleaved.evict(key));
  REQUIRE(interleaved.install(key, bytes).is_ok());
  const auto c = interleaved.get(key);
  CHECK(c->gate.layout == kernels::WeightLayout::kInterleaved16);
  CHECK(testing::expert_rows_bytes(*c) == bytes);
  // Only bf16 is affected by interleave_bf16: a store asked for Q8_0 copies
  // keeps them in rows.
  ExpertFormat q8 = format;
  q8.convert_to = kernels::WeightType::kQ8_0;
  ExpertStore converted(**ckpt, {-1}, q8);
  REQUIRE(converted.load(key).is_ok());
  CHECK(converted.get(key)->gate.layout == kernels::WeightLayout::kRows);
}

}  // namespace
}  // namespace dancemoe
