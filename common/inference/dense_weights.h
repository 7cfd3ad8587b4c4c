// DenseWeights: every non-expert tensor of a model (embeddings, attention,
// norms, routers, shared experts, dense MLP layers, lm_head), in host memory:
// the tensors common/model's required_tensors() lists for the config's
// blocks, less the routed experts.
//
// Matrices keep their on-disk format (bf16/f16/f32 or a GGUF block format)
// and are handed to kernels as WeightViews: read into one aligned block, or,
// from a GGUF file, used where they lie in its memory mapping (no copy; only
// llama-layout q/k, whose rows must be reordered, are copied). The small
// vectors (norm weights, biases) are widened to f32 once at load. Immutable
// after load(); safe to share between threads; the Checkpoint must outlive
// it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/tensor/host_buffer.h"
#include "kernels/kernels.h"

namespace dancemoe {

struct AttentionWeights {
  kernels::WeightView q, k, v, o;  // grouped attention (q also MLA without q_lora_rank)
  const float* q_bias = nullptr;   // [q_dim] or null
  const float* k_bias = nullptr;   // [kv_dim] or null
  const float* v_bias = nullptr;   // [kv_dim] or null
  const float* o_bias = nullptr;   // [hidden] or null
  const float* q_norm = nullptr;   // [head_dim] (per head) or [q_dim] (full) or null
  const float* k_norm = nullptr;
  const float* sinks = nullptr;  // [n_heads] or null
  // MLA (AttentionKind::kLatent); see common/backend/cpu/cpu_latent_attention.h.
  kernels::WeightView q_a, q_b, kv_a, kv_b;
  const float* q_a_norm = nullptr;   // [q_lora_rank]
  const float* kv_a_norm = nullptr;  // [kv_lora_rank]
};

struct LayerWeights {
  const float* input_norm = nullptr;           // [hidden]
  const float* post_attention_norm = nullptr;  // [hidden]
  AttentionWeights attention;
  bool is_moe = false;
  // MoE layers
  kernels::WeightView router;                               // [n_experts, hidden]
  const float* router_bias = nullptr;                       // [n_experts] or null
  const float* router_choice_bias = nullptr;                // [n_experts] or null
  kernels::WeightView shared_gate, shared_up, shared_down;  // .data null: no shared expert
  kernels::WeightView shared_expert_gate;                   // [1, hidden] or .data null
  // Dense layers
  kernels::WeightView dense_gate, dense_up, dense_down;
};

class DenseWeights {
 public:
  // copy_mapped: copy even matrices usable in place in a GGUF mapping (into
  // anonymous, huge-page memory) -- see RuntimeOptions::copy_mapped_weights.
  // interleave_k: hold Q4_K / Q5_K / Q6_K / Q8_0 matrices of whole groups of 16 rows
  // interleaved for the CPU kernels (kernels/interleave.h;
  // ExpertFormat::interleave_k), except the embedding, whose rows are
  // read one by one, and MLA's kv_b, read by rows too. A copied tensor's
  // pages in a mapping are dropped from the process. The embedding stays in
  // its mapping when copying unless it is also the LM head (only its rows of
  // the tokens seen are read).
  static Result<DenseWeights> load(const Checkpoint& checkpoint, const LoadProgress& progress = {},
                                   bool copy_mapped = false, bool interleave_k = false);

  DenseWeights(DenseWeights&&) = default;
  DenseWeights& operator=(DenseWeights&&) = default;

  const kernels::WeightView& embed() const { return embed_; }      // [vocab, hidden]
  const kernels::WeightView& lm_head() const { return lm_head_; }  // [vocab, hidden]
  const float* final_norm() const { return final_norm_; }
  const LayerWeights& layer(int64_t l) const { return layers_[static_cast<size_t>(l)]; }

  // Bytes of weights as held in memory: matrices in their format (copied or
  // mapped) + f32 vectors.
  uint64_t n_bytes() const { return matrices_.size() + vectors_.size() + mapped_bytes_; }

 private:
  struct LoadPlan;  // dense_weights.cpp
  // Lists every dense tensor and where it goes; sets up layers_.
  LoadPlan plan_load(const Checkpoint& checkpoint, bool copy_mapped, bool interleave_k);
  // Where the tensor of a (dense) role and layer goes.
  kernels::WeightView* matrix_target(TensorRole role, int64_t layer);
  const float** vector_target(TensorRole role, int64_t layer);
  DenseWeights() = default;

  HostBuffer matrices_;
  HostBuffer vectors_;
  uint64_t mapped_bytes_ = 0;  // matrices used in place in a GGUF mapping
  kernels::WeightView embed_;
  kernels::WeightView lm_head_;
  const float* final_norm_ = nullptr;
  std::vector<LayerWeights> layers_;
};

}  // namespace dancemoe
