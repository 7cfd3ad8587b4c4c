// The backend seam on the CPU: the Transformer drives any ForwardEngine, so
// a prompt longer than an engine's batch runs in pieces with the same
// logits, and a KV cache from another backend is refused with a message.
#include "common/backend/cpu/cpu_forward.h"

#include <doctest/doctest.h>

#include "common/inference/transformer.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::backend {
namespace {

// The CPU engine, but taking at most 3 tokens per batch.
class SmallBatchEngine final : public ForwardEngine {
 public:
  explicit SmallBatchEngine(std::unique_ptr<CpuForward> inner) : inner_(std::move(inner)) {}
  std::string describe() const override { return "small-batch " + inner_->describe(); }
  int64_t max_batch_tokens() const override { return 3; }
  Result<KvCache> new_cache(int64_t capacity) override { return inner_->new_cache(capacity); }
  int64_t cache_bytes_per_position() const override { return inner_->cache_bytes_per_position(); }
  Status begin(std::span<const int32_t> tokens, KvCache& cache) override {
    CHECK(tokens.size() <= 3);
    return inner_->begin(tokens, cache);
  }
  Status attention(int64_t layer, KvCache& cache) override {
    return inner_->attention(layer, cache);
  }
  Status moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) override {
    return inner_->moe(layer, executor, observer);
  }
  Status dense_mlp(int64_t layer) override { return inner_->dense_mlp(layer); }
  Status finish(int64_t first_row, int64_t n_rows, float* logits) override {
    return inner_->finish(first_row, n_rows, logits);
  }

 private:
  std::unique_ptr<CpuForward> inner_;
};

class ForeignStorage final : public KvCache::ExternalStorage {};

TEST_CASE("backend seam: a prompt longer than the engine's batch runs in pieces, same logits") {
  testing::TempDir dir("seam");
  testing::write_model(testing::tiny_spec(5), dir.path());
  auto model = testing::open_model(dir.path());
  const ModelConfig& c = model->config();
  ExpertComputer computer(
      std::make_unique<CpuExpertEngine>(model->forward_pool(), ComputePrecision::kF32));
  LocalMoeExecutor moe(model->experts(), computer, c.n_experts);
  Transformer pieces(c,
                     std::make_unique<SmallBatchEngine>(std::make_unique<CpuForward>(
                         c, model->dense(), ComputePrecision::kF32, model->forward_pool())),
                     moe, ComputePrecision::kF32);
  const std::vector<int32_t> ids = {1, 5, 9, 200, 17, 3, 3, 44, 99, 250, 7};
  std::vector<float> whole, split;
  auto cache_a = model->transformer().new_cache(32);
  auto cache_b = pieces.new_cache(32);
  REQUIRE(cache_a.is_ok());
  REQUIRE(cache_b.is_ok());
  REQUIRE(model->transformer().forward(ids, *cache_a, LogitsMode::kAll, &whole).is_ok());
  REQUIRE(pieces.forward(ids, *cache_b, LogitsMode::kAll, &split).is_ok());
  CHECK(cache_b->n_past() == static_cast<int64_t>(ids.size()));
  REQUIRE(whole.size() == split.size());
  CHECK(testing::max_abs_diff(whole, split) <= 1e-5f);
  // kLast: the last row of the last piece.
  std::vector<float> last;
  auto cache_c = pieces.new_cache(32);
  REQUIRE(pieces.forward(ids, *cache_c, LogitsMode::kLast, &last).is_ok());
  CHECK(testing::max_abs_diff(last, std::span(whole).last(static_cast<size_t>(c.vocab_size))) <=
        1e-5f);
}

TEST_CASE("backend seam: the CPU engine refuses a KV cache another backend made") {
  testing::TempDir dir("seam");
  testing::write_model(testing::tiny_spec(5), dir.path());
  auto model = testing::open_model(dir.path());
  const ModelConfig& c = model->config();
  KvCache foreign =
      KvCache::external(c.n_layers, c.kv_dim(), 16, std::make_unique<ForeignStorage>());
  CHECK(foreign.keys(0) == nullptr);
  std::vector<float> logits;
  const std::vector<int32_t> ids = {1, 2, 3};
  Status s = model->transformer().forward(ids, foreign, LogitsMode::kLast, &logits);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("another backend") != std::string::npos);
  CHECK(foreign.n_past() == 0);
}

}  // namespace
}  // namespace dancemoe::backend
