#include "common/model/dense_weights.h"

#include <cstring>

#include "kernels/cpu/numeric.h"

namespace dancemoe {
namespace {

constexpr uint64_t kAlign = 64;

uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Result<DenseWeights> DenseWeights::load(const Checkpoint& ckpt, const LoadProgress& progress) {
  const ModelConfig& c = ckpt.config();
  struct Matrix {
    const TensorLocation* loc;
    kernels::WeightView* view;
    uint64_t offset;
  };
  struct Vector {
    const TensorLocation* loc;
    const float** target;
    uint64_t offset;
  };
  DenseWeights w;
  w.layers_.resize(static_cast<size_t>(c.n_layers));
  std::vector<Matrix> matrices;
  std::vector<Vector> vectors;
  uint64_t matrix_bytes = 0;
  uint64_t vector_bytes = 0;
  auto add_matrix = [&](TensorRole role, int64_t layer, kernels::WeightView* view) {
    const TensorLocation* loc = &ckpt.tensor(role, layer);
    matrices.push_back({loc, view, matrix_bytes});
    matrix_bytes += align_up(loc->n_bytes);
  };
  auto add_vector = [&](TensorRole role, int64_t layer, const float** target) {
    const TensorLocation* loc = &ckpt.tensor(role, layer);
    uint64_t n = 1;
    for (int64_t d : loc->shape) n *= static_cast<uint64_t>(d);
    vectors.push_back({loc, target, vector_bytes});
    vector_bytes += align_up(n * sizeof(float));
  };

  add_matrix(TensorRole::kEmbed, 0, &w.embed_);
  if (!c.tie_word_embeddings) add_matrix(TensorRole::kLmHead, 0, &w.lm_head_);
  add_vector(TensorRole::kFinalNorm, 0, &w.final_norm_);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& lw = w.layers_[static_cast<size_t>(l)];
    lw.is_moe = c.layer_is_moe[static_cast<size_t>(l)];
    add_vector(TensorRole::kInputNorm, l, &lw.input_norm);
    add_vector(TensorRole::kPostAttentionNorm, l, &lw.post_attention_norm);
    add_matrix(TensorRole::kQ, l, &lw.attention.q);
    add_matrix(TensorRole::kK, l, &lw.attention.k);
    add_matrix(TensorRole::kV, l, &lw.attention.v);
    add_matrix(TensorRole::kO, l, &lw.attention.o);
    if (c.attention_bias) {
      add_vector(TensorRole::kQBias, l, &lw.attention.q_bias);
      add_vector(TensorRole::kKBias, l, &lw.attention.k_bias);
      add_vector(TensorRole::kVBias, l, &lw.attention.v_bias);
    }
    if (c.qk_norm != QkNormKind::kNone) {
      add_vector(TensorRole::kQNorm, l, &lw.attention.q_norm);
      add_vector(TensorRole::kKNorm, l, &lw.attention.k_norm);
    }
    if (lw.is_moe) {
      add_matrix(TensorRole::kRouter, l, &lw.router);
    } else {
      add_matrix(TensorRole::kDenseGate, l, &lw.dense_gate);
      add_matrix(TensorRole::kDenseUp, l, &lw.dense_up);
      add_matrix(TensorRole::kDenseDown, l, &lw.dense_down);
    }
  }

  DMOE_ASSIGN_OR_RETURN(w.matrices_, HostBuffer::allocate(matrix_bytes));
  DMOE_ASSIGN_OR_RETURN(w.vectors_, HostBuffer::allocate(vector_bytes));
  auto* matrix_base = static_cast<uint8_t*>(w.matrices_.data());
  auto* vector_base = static_cast<uint8_t*>(w.vectors_.data());

  uint64_t total = 0;
  for (const Matrix& m : matrices) total += m.loc->n_bytes;
  for (const Vector& v : vectors) total += v.loc->n_bytes;
  uint64_t done = 0;
  for (const Matrix& m : matrices) {
    uint8_t* dst = matrix_base + m.offset;
    DMOE_RETURN_IF_ERROR(ckpt.read_tensor(*m.loc, dst));
    *m.view =
        kernels::WeightView{dst, to_weight_type(m.loc->dtype), m.loc->shape[0], m.loc->shape[1]};
    done += m.loc->n_bytes;
    if (progress) progress(done, total);
  }
  std::vector<uint8_t> staging;
  for (const Vector& v : vectors) {
    staging.resize(v.loc->n_bytes);
    DMOE_RETURN_IF_ERROR(ckpt.read_tensor(*v.loc, staging.data()));
    auto* dst = reinterpret_cast<float*>(vector_base + v.offset);
    const size_t n = v.loc->n_bytes / dtype_size_bytes(v.loc->dtype);
    for (size_t i = 0; i < n; ++i) {
      uint16_t half;
      switch (v.loc->dtype) {
        case DType::kF32:
          std::memcpy(&dst[i], staging.data() + 4 * i, 4);
          break;
        case DType::kBF16:
          std::memcpy(&half, staging.data() + 2 * i, 2);
          dst[i] = kernels::bf16_to_float(half);
          break;
        case DType::kF16:
          std::memcpy(&half, staging.data() + 2 * i, 2);
          dst[i] = kernels::f16_to_float(half);
          break;
      }
    }
    *v.target = dst;
    done += v.loc->n_bytes;
    if (progress) progress(done, total);
  }
  if (c.tie_word_embeddings) w.lm_head_ = w.embed_;
  return w;
}

}  // namespace dancemoe
