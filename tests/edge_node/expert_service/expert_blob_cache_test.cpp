// What a peer receives for an expert: the rows layout of its held format,
// also when this node holds it interleaved for its CPU kernels
// (kernels/interleave.h) -- the same bytes and digest as a node holding the
// file's rows in place.
#include "edge_node/expert_service/expert_blob_cache.h"

#include <doctest/doctest.h>

#include "kernels/interleave.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::node {
namespace {

TEST_CASE("expert blob: an interleaved expert is sent in the file's rows layout") {
  testing::TempDir dir("blob-q4k");
  SyntheticModelSpec spec;
  spec.preset = "small";  // 256-wide experts: whole Q4_K super-blocks
  const auto file =
      testing::write_gguf_model(spec, dir.path(), "small-q4_k_m.gguf", gguf::Mixture::kQ4_K_M);
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(file);
  REQUIRE(ckpt.is_ok());
  ExpertStore plain(**ckpt);
  ExpertFormat format;
  format.interleave_k = true;
  ExpertStore interleaved(**ckpt, {-1}, format);
  const ExpertRef key{1, 5};
  REQUIRE(plain.load(key).is_ok());
  REQUIRE(interleaved.load(key).is_ok());
  REQUIRE(interleaved.get(key)->gate.layout == kernels::WeightLayout::kInterleaved16);
  const auto a = serialize_expert(*plain.get(key));
  const auto b = serialize_expert(*interleaved.get(key));
  CHECK(b->bytes.size() == interleaved.expert_bytes(key));
  CHECK(b->bytes == a->bytes);
  CHECK(b->sha256 == a->sha256);
  // The cache serves the same; the receiver installs it.
  ExpertBlobCache cache(interleaved);
  Result<std::shared_ptr<const ExpertBlob>> got = cache.get(key);
  REQUIRE(got.is_ok());
  CHECK((*got)->bytes == a->bytes);
  ExpertStore receiver(**ckpt, {-1}, format);
  CHECK(receiver.install(key, (*got)->bytes).is_ok());
}

}  // namespace
}  // namespace dancemoe::node
