#include "common/inference/dense_weights.h"

#include <cstring>

#include "kernels/quantize.h"

namespace dancemoe {
namespace {

constexpr uint64_t kAlign = 64;

uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

// Where each dense tensor goes: matrices keep the checkpoint's dtype in one
// buffer, norms and biases are widened to f32 in another.
struct DenseWeights::LoadPlan {
  struct Matrix {
    const TensorLocation* loc;
    kernels::WeightView* view;
    uint64_t offset;
    bool in_place;
  };
  struct Vector {
    const TensorLocation* loc;
    const float** target;
    uint64_t offset;
  };
  std::vector<Matrix> matrices;
  std::vector<Vector> vectors;
  uint64_t matrix_bytes = 0;
  uint64_t vector_bytes = 0;

  // A matrix used where it is (a GGUF mapping) needs no room here.
  void add_matrix(const TensorLocation& loc, kernels::WeightView* view) {
    const bool in_place = loc.usable_in_place() && !copy_mapped;
    matrices.push_back({&loc, view, in_place ? 0 : matrix_bytes, in_place});
    if (!in_place) matrix_bytes += align_up(loc.n_bytes);
  }
  bool copy_mapped = false;
  void add_vector(const TensorLocation& loc, const float** target) {
    uint64_t n = 1;
    for (int64_t d : loc.shape) n *= static_cast<uint64_t>(d);
    vectors.push_back({&loc, target, vector_bytes});
    vector_bytes += align_up(n * sizeof(float));
  }
  uint64_t read_bytes() const {
    uint64_t total = 0;
    for (const Matrix& m : matrices) total += m.loc->n_bytes;
    for (const Vector& v : vectors) total += v.loc->n_bytes;
    return total;
  }
};

DenseWeights::LoadPlan DenseWeights::plan_load(const Checkpoint& ckpt, bool copy_mapped) {
  const ModelConfig& c = ckpt.config();
  LoadPlan plan;
  plan.copy_mapped = copy_mapped;
  auto matrix = [&](TensorRole role, int64_t layer, kernels::WeightView* view) {
    plan.add_matrix(ckpt.tensor(role, layer), view);
  };
  auto vector = [&](TensorRole role, int64_t layer, const float** target) {
    plan.add_vector(ckpt.tensor(role, layer), target);
  };
  layers_.resize(static_cast<size_t>(c.n_layers));
  matrix(TensorRole::kEmbed, 0, &embed_);
  if (!c.tie_word_embeddings) matrix(TensorRole::kLmHead, 0, &lm_head_);
  vector(TensorRole::kFinalNorm, 0, &final_norm_);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& lw = layers_[static_cast<size_t>(l)];
    lw.is_moe = c.layer_is_moe[static_cast<size_t>(l)];
    vector(TensorRole::kInputNorm, l, &lw.input_norm);
    vector(TensorRole::kPostAttentionNorm, l, &lw.post_attention_norm);
    matrix(TensorRole::kQ, l, &lw.attention.q);
    matrix(TensorRole::kK, l, &lw.attention.k);
    matrix(TensorRole::kV, l, &lw.attention.v);
    matrix(TensorRole::kO, l, &lw.attention.o);
    if (c.attention_bias) {
      vector(TensorRole::kQBias, l, &lw.attention.q_bias);
      vector(TensorRole::kKBias, l, &lw.attention.k_bias);
      vector(TensorRole::kVBias, l, &lw.attention.v_bias);
    }
    if (c.qk_norm != QkNormKind::kNone) {
      vector(TensorRole::kQNorm, l, &lw.attention.q_norm);
      vector(TensorRole::kKNorm, l, &lw.attention.k_norm);
    }
    if (lw.is_moe) {
      matrix(TensorRole::kRouter, l, &lw.router);
    } else {
      matrix(TensorRole::kDenseGate, l, &lw.dense_gate);
      matrix(TensorRole::kDenseUp, l, &lw.dense_up);
      matrix(TensorRole::kDenseDown, l, &lw.dense_down);
    }
  }
  return plan;
}

Result<DenseWeights> DenseWeights::load(const Checkpoint& ckpt, const LoadProgress& progress,
                                        bool copy_mapped) {
  DenseWeights w;
  const LoadPlan plan = w.plan_load(ckpt, copy_mapped);
  DMOE_ASSIGN_OR_RETURN(w.matrices_, HostBuffer::allocate(plan.matrix_bytes));
  DMOE_ASSIGN_OR_RETURN(w.vectors_, HostBuffer::allocate(plan.vector_bytes));
  auto* matrix_base = static_cast<uint8_t*>(w.matrices_.data());
  auto* vector_base = static_cast<uint8_t*>(w.vectors_.data());
  const uint64_t total = plan.read_bytes();
  uint64_t done = 0;
  for (const LoadPlan::Matrix& m : plan.matrices) {
    const uint8_t* data = m.loc->mapped;
    if (m.in_place) {
      w.mapped_bytes_ += m.loc->n_bytes;
    } else {
      uint8_t* dst = matrix_base + m.offset;
      DMOE_RETURN_IF_ERROR(ckpt.read_tensor(*m.loc, dst));
      data = dst;
    }
    *m.view = kernels::WeightView{data, m.loc->type, m.loc->shape[0], m.loc->shape[1]};
    done += m.loc->n_bytes;
    if (progress) progress(done, total);
  }
  std::vector<uint8_t> staging;
  for (const LoadPlan::Vector& v : plan.vectors) {
    staging.resize(v.loc->n_bytes);
    DMOE_RETURN_IF_ERROR(ckpt.read_tensor(*v.loc, staging.data()));
    auto* dst = reinterpret_cast<float*>(vector_base + v.offset);
    int64_t n = 1;
    for (int64_t d : v.loc->shape) n *= d;
    kernels::dequantize_values(v.loc->type, staging.data(), n, dst);
    *v.target = dst;
    done += v.loc->n_bytes;
    if (progress) progress(done, total);
  }
  if (ckpt.config().tie_word_embeddings) w.lm_head_ = w.embed_;
  return w;
}

}  // namespace dancemoe
