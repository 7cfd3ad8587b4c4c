#include "common/inference/dense_weights.h"

#include <cstring>

#include "common/base/align.h"
#include "common/base/check.h"
#include "kernels/interleave.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe {
namespace {

constexpr uint64_t kDenseAlign = 64;

}  // namespace

// Where each dense tensor goes: matrices keep the checkpoint's dtype in one
// buffer, norms and biases are widened to f32 in another.
struct DenseWeights::LoadPlan {
  struct Matrix {
    const TensorLocation* loc;
    kernels::WeightView* view;
    uint64_t offset;
    bool in_place;
    bool interleaved;
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

  // A matrix used where it is (a GGUF mapping) needs no room here; an
  // interleaved one takes as many bytes as its rows.
  void add_matrix(const TensorLocation& loc, kernels::WeightView* view, bool interleave,
                  bool keep_mapped) {
    // Block formats only: bf16 dense matrices stay in rows (model_runtime.cpp).
    const bool interleaved = interleave && kernels::is_block_format(loc.type) &&
                             kernels::can_interleave(loc.type, loc.shape[0], loc.shape[1]);
    const bool in_place = loc.usable_in_place() && (!copy_mapped || keep_mapped) && !interleaved;
    matrices.push_back({&loc, view, in_place ? 0 : matrix_bytes, in_place, interleaved});
    if (!in_place) matrix_bytes += align_up(loc.n_bytes, kDenseAlign);
  }
  bool copy_mapped = false;
  void add_vector(const TensorLocation& loc, const float** target) {
    uint64_t n = 1;
    for (int64_t d : loc.shape) n *= static_cast<uint64_t>(d);
    vectors.push_back({&loc, target, vector_bytes});
    vector_bytes += align_up(n * sizeof(float), kDenseAlign);
  }
  uint64_t read_bytes() const {
    uint64_t total = 0;
    for (const Matrix& m : matrices) total += m.loc->n_bytes;
    for (const Vector& v : vectors) total += v.loc->n_bytes;
    return total;
  }
};

DenseWeights::LoadPlan DenseWeights::plan_load(const Checkpoint& ckpt, bool copy_mapped,
                                               bool interleave_k) {
  const ModelConfig& c = ckpt.config();
  LoadPlan plan;
  plan.copy_mapped = copy_mapped;
  layers_.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    layers_[static_cast<size_t>(l)].is_moe = c.layer_is_moe[static_cast<size_t>(l)];
  }
  for (const RequiredTensor& req : required_tensors(c)) {
    if (is_expert_role(req.role)) continue;
    const TensorLocation& loc = ckpt.tensor(req.role, req.layer);
    if (is_vector_role(req.role)) {
      plan.add_vector(loc, vector_target(req.role, req.layer));
    } else {
      // The embedding's rows and kv_b's are read one at a time.
      const bool rows_read = req.role == TensorRole::kEmbed || req.role == TensorRole::kKvB;
      // Of an embedding only the rows of the tokens seen are read, so it
      // stays in its mapping even when the rest is copied -- unless it is
      // also the LM head, streamed whole every token.
      const bool keep_mapped = req.role == TensorRole::kEmbed && !c.tie_word_embeddings;
      plan.add_matrix(loc, matrix_target(req.role, req.layer), interleave_k && !rows_read,
                      keep_mapped);
    }
  }
  return plan;
}

kernels::WeightView* DenseWeights::matrix_target(TensorRole role, int64_t layer) {
  LayerWeights& lw = layers_[static_cast<size_t>(layer)];
  AttentionWeights& aw = lw.attention;
  switch (role) {
    case TensorRole::kEmbed:
      return &embed_;
    case TensorRole::kLmHead:
      return &lm_head_;
    case TensorRole::kQ:
      return &aw.q;
    case TensorRole::kK:
      return &aw.k;
    case TensorRole::kV:
      return &aw.v;
    case TensorRole::kO:
      return &aw.o;
    case TensorRole::kQA:
      return &aw.q_a;
    case TensorRole::kQB:
      return &aw.q_b;
    case TensorRole::kKvA:
      return &aw.kv_a;
    case TensorRole::kKvB:
      return &aw.kv_b;
    case TensorRole::kRouter:
      return &lw.router;
    case TensorRole::kSharedGate:
      return &lw.shared_gate;
    case TensorRole::kSharedUp:
      return &lw.shared_up;
    case TensorRole::kSharedDown:
      return &lw.shared_down;
    case TensorRole::kSharedExpertGate:
      return &lw.shared_expert_gate;
    case TensorRole::kDenseGate:
      return &lw.dense_gate;
    case TensorRole::kDenseUp:
      return &lw.dense_up;
    case TensorRole::kDenseDown:
      return &lw.dense_down;
    default:
      DMOE_CHECK(false && "not a dense matrix role");
      return nullptr;
  }
}

const float** DenseWeights::vector_target(TensorRole role, int64_t layer) {
  LayerWeights& lw = layers_[static_cast<size_t>(layer)];
  AttentionWeights& aw = lw.attention;
  switch (role) {
    case TensorRole::kFinalNorm:
      return &final_norm_;
    case TensorRole::kInputNorm:
      return &lw.input_norm;
    case TensorRole::kPostAttentionNorm:
      return &lw.post_attention_norm;
    case TensorRole::kQBias:
      return &aw.q_bias;
    case TensorRole::kKBias:
      return &aw.k_bias;
    case TensorRole::kVBias:
      return &aw.v_bias;
    case TensorRole::kOBias:
      return &aw.o_bias;
    case TensorRole::kQNorm:
      return &aw.q_norm;
    case TensorRole::kKNorm:
      return &aw.k_norm;
    case TensorRole::kSinks:
      return &aw.sinks;
    case TensorRole::kQANorm:
      return &aw.q_a_norm;
    case TensorRole::kKvANorm:
      return &aw.kv_a_norm;
    case TensorRole::kRouterBias:
      return &lw.router_bias;
    case TensorRole::kRouterChoiceBias:
      return &lw.router_choice_bias;
    default:
      DMOE_CHECK(false && "not a dense vector role");
      return nullptr;
  }
}

Result<DenseWeights> DenseWeights::load(const Checkpoint& ckpt, const LoadProgress& progress,
                                        bool copy_mapped, bool interleave_k) {
  DenseWeights w;
  const LoadPlan plan = w.plan_load(ckpt, copy_mapped, interleave_k);
  DMOE_ASSIGN_OR_RETURN(w.matrices_, HostBuffer::allocate(plan.matrix_bytes));
  DMOE_ASSIGN_OR_RETURN(w.vectors_, HostBuffer::allocate(plan.vector_bytes));
  auto* matrix_base = static_cast<uint8_t*>(w.matrices_.data());
  auto* vector_base = static_cast<uint8_t*>(w.vectors_.data());
  const uint64_t total = plan.read_bytes();
  uint64_t done = 0;
  std::vector<uint8_t> rows;  // an interleaved matrix's rows, read first
  for (const LoadPlan::Matrix& m : plan.matrices) {
    const uint8_t* data = m.loc->mapped;
    if (m.in_place) {
      w.mapped_bytes_ += m.loc->n_bytes;
    } else {
      uint8_t* dst = matrix_base + m.offset;
      if (m.interleaved) {
        // From the mapping where the rows lie as they are (no staging copy:
        // the LM head alone is 27 MB of the medium Q4_K_M file).
        const uint8_t* src = m.loc->mapped;
        if (!m.loc->usable_in_place()) {
          rows.resize(m.loc->n_bytes);
          DMOE_RETURN_IF_ERROR(ckpt.read_tensor(*m.loc, rows.data()));
          src = rows.data();
        }
        kernels::interleave_matrix(m.loc->type, src, m.loc->shape[0], m.loc->shape[1], dst);
      } else {
        DMOE_RETURN_IF_ERROR(ckpt.read_tensor(*m.loc, dst));
      }
      ckpt.drop_mapped_pages(*m.loc);
      data = dst;
    }
    *m.view = kernels::WeightView{
        data, m.loc->type, m.loc->shape[0], m.loc->shape[1],
        m.interleaved ? kernels::WeightLayout::kInterleaved16 : kernels::WeightLayout::kRows};
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
