// DeviceWeights: a model's weights on its GPUs, uploaded once at load.
// The dense part (embeddings, attention and its biases / sinks, norms,
// routers and their biases, dense MLPs, shared experts, LM head) lives on
// one device; each expert on exactly one device (the
// placement's (node, device) choice). Matrices are bf16 on the device
// whatever their dtype on disk (f16 / f32 are rounded once at upload: the
// GPU kernels are bf16-weight kernels); norm weights and biases stay f32.
//
// Per device and MoE layer there are pointer tables [n_experts] of the
// experts it holds (null elsewhere), the operands of the grouped expert
// kernels. find_expert() maps an expert's HOST weights (an ExpertJob's
// WeightViews, which come from the ExpertStore) to its device copy; the
// mapping keeps those host weights alive, so their addresses cannot be
// reused by another expert while it exists.
//
// Experts live in slots: each device gets room for `expert_slots` experts at
// upload (at least those it is given then), so experts can arrive and leave
// later -- a node's migrations -- through install() and release() (the
// ExpertResidency the ExpertStore calls; cuda_backend.cpp adapts it). A
// released slot is reused only after the device has finished all the work
// queued before the release (a device synchronise at the next install), and
// engines hold read_lock() from looking experts up until their kernels are
// queued, so no kernel reads a slot being overwritten.
//
// The dense part is immutable after upload(); the expert slots are
// guarded by a reader/writer lock. Safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "common/backend/cuda/cuda_device.h"
#include "common/inference/dense_weights.h"
#include "common/inference/expert_store.h"
#include "common/model/model_config.h"

namespace dancemoe::backend::cuda {

class Uploader;  // device_weights.cpp

struct DeviceAttention {
  const uint16_t* q = nullptr;  // [q_dim, hidden] (MLA: null with q_lora_rank)
  const uint16_t* k = nullptr;  // [kv_dim, hidden] (grouped attention only)
  const uint16_t* v = nullptr;  // [kv_dim, hidden] (grouped attention only)
  const uint16_t* o = nullptr;  // [hidden, attention_out_dim]
  const float* q_bias = nullptr;
  const float* k_bias = nullptr;
  const float* v_bias = nullptr;
  const float* o_bias = nullptr;  // [hidden] or null
  const float* q_norm = nullptr;  // [head_dim] (per head) or [q_dim] (full)
  const float* k_norm = nullptr;
  const float* sinks = nullptr;  // [n_heads] or null
  // Multi-head latent attention (AttentionKind::kLatent; null otherwise).
  const uint16_t* q_a = nullptr;     // [q_lora_rank, hidden] (null: q_lora_rank 0, q above)
  const float* q_a_norm = nullptr;   // [q_lora_rank]
  const uint16_t* q_b = nullptr;     // [q_dim, q_lora_rank]
  const uint16_t* kv_a = nullptr;    // [kv_lora_rank + rope_dim, hidden]
  const float* kv_a_norm = nullptr;  // [kv_lora_rank]
  const uint16_t* kv_b = nullptr;    // [n_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank]
};

struct DeviceLayer {
  const float* input_norm = nullptr;
  const float* post_attention_norm = nullptr;
  DeviceAttention attention;
  const uint16_t* router = nullptr;           // [n_experts, hidden] (MoE layers)
  const float* router_bias = nullptr;         // [n_experts] or null
  const float* router_choice_bias = nullptr;  // [n_experts] or null
  // The shared expert of MoE layers (null: none) as a one-group table, and
  // its sigmoid gate [1, hidden] (null: none).
  const uint16_t* const* shared_gate = nullptr;
  const uint16_t* const* shared_up = nullptr;
  const uint16_t* const* shared_down = nullptr;
  const uint16_t* shared_expert_gate = nullptr;
  // Dense MLP layers as one-group tables for the grouped expert kernels.
  const uint16_t* const* dense_gate = nullptr;
  const uint16_t* const* dense_up = nullptr;
  const uint16_t* const* dense_down = nullptr;
};

struct ExpertOnDevice {
  int device_index = 0;  // into devices()
  const uint16_t* gate = nullptr;
  const uint16_t* up = nullptr;
  const uint16_t* down = nullptr;
  // gpt-oss's expert biases (null for plain experts).
  const float* gate_bias = nullptr;  // [inter]
  const float* up_bias = nullptr;    // [inter]
  const float* down_bias = nullptr;  // [hidden]
  int64_t inter = 0;
  const void* host_up = nullptr;  // to check a job's views belong together
  const void* host_down = nullptr;
};

struct UploadPlan {
  // Experts each device has room for (empty, or an entry below the
  // experts it is given: exactly those).
  std::vector<int64_t> expert_slots;
  const ModelConfig* config = nullptr;
  const DenseWeights* dense = nullptr;
  const ExpertStore* experts = nullptr;
  std::vector<ExpertRef> resident;
  std::vector<int> expert_device;  // per resident expert, an index into devices
  std::vector<std::shared_ptr<CudaDevice>> devices;
  int dense_device = 0;  // index into devices
  LoadProgress progress;
};

class DeviceWeights {
 public:
  // Bytes the dense part takes on its device (bf16 matrices, f32 vectors,
  // pointer tables), for planning before anything is allocated.
  static uint64_t dense_bytes(const ModelConfig& config);
  // Bytes one expert takes on a device.
  static uint64_t expert_bytes(const ModelConfig& config);
  // Bytes of the expert pointer tables (and bias tables) every device holds
  // beside its expert slots.
  static uint64_t expert_table_bytes(const ModelConfig& config);

  static Result<std::shared_ptr<const DeviceWeights>> upload(const UploadPlan& plan);

  const std::vector<std::shared_ptr<CudaDevice>>& devices() const { return devices_; }
  int dense_device() const { return dense_device_; }

  const DeviceLayer& layer(int64_t l) const { return layers_[static_cast<size_t>(l)]; }
  const uint16_t* embed() const { return embed_; }      // [vocab, hidden]
  const uint16_t* lm_head() const { return lm_head_; }  // [vocab, hidden]
  const float* final_norm() const { return final_norm_; }

  // Device pointer tables [n_experts] of `layer` on device `device_index`.
  const uint16_t* const* gate_table(int device_index, int64_t layer) const;
  const uint16_t* const* up_table(int device_index, int64_t layer) const;
  const uint16_t* const* down_table(int device_index, int64_t layer) const;
  // Device pointer tables [n_experts] of the experts' biases (gpt-oss's
  // expert_bias); null when the model's experts have none.
  const float* const* gate_bias_table(int device_index, int64_t layer) const;
  const float* const* up_bias_table(int device_index, int64_t layer) const;
  const float* const* down_bias_table(int device_index, int64_t layer) const;
  // Whether device `device_index` holds every expert of every MoE layer.
  bool holds_all_experts(int device_index) const;
  int64_t n_experts_on(int device_index) const;
  int64_t expert_slots(int device_index) const;

  // Held by an engine from its lookups until its kernels are queued.
  std::shared_lock<std::shared_mutex> read_lock() const {
    return std::shared_lock<std::shared_mutex>(slots_mutex_);
  }
  // The device copy of the expert whose host gate weights are at
  // `host_gate`; nullptr when no device holds it. Call under read_lock().
  const ExpertOnDevice* find_expert(const void* host_gate) const;

  // Copies `host` (an expert the ExpertStore holds for device
  // `device_index`) into a free slot there and points the device's tables
  // at it. resource_exhausted naming the device when every slot is taken.
  Status install(const std::shared_ptr<const ExpertWeights>& host, int device_index) const;
  // Frees the slot of `host`'s copy (no-op when none).
  void release(const ExpertWeights& host) const;

 private:
  struct DenseLayout;  // where each dense tensor goes (device_weights.cpp)

  DeviceWeights() = default;
  static DenseLayout lay_out_dense(const ModelConfig& config, const DenseWeights& dense);
  // The steps of upload(): the dense part in one allocation on the dense
  // device, then each device's experts and pointer tables in one allocation.
  // `total_bytes` is what the progress callback counts towards.
  Status upload_dense(const UploadPlan& plan, const DenseLayout& layout, uint64_t total_bytes);
  Status upload_experts(const UploadPlan& plan, const std::vector<std::vector<size_t>>& on_device,
                        uint64_t total_bytes);

  std::vector<std::shared_ptr<CudaDevice>> devices_;
  int dense_device_ = 0;
  int64_t n_layers_ = 0;
  int64_t n_experts_ = 0;
  std::vector<DeviceMemory> memory_;  // owns every allocation
  std::vector<DeviceLayer> layers_;
  const uint16_t* embed_ = nullptr;
  const uint16_t* lm_head_ = nullptr;
  const float* final_norm_ = nullptr;
  // [device][layer][3][n_experts] device pointers, one block per device;
  // with expert biases followed by the same [layer][3][n_experts] of bias
  // pointers (bias_tables_).
  std::vector<const uint16_t* const*> tables_;
  std::vector<const float* const*> bias_tables_;

  // The expert slots of one device (guarded by slots_mutex_).
  struct Slots {
    uint8_t* base = nullptr;  // slot i at base + i * slot_bytes
    int64_t capacity = 0;
    std::vector<int64_t> free;
    std::vector<int64_t> released;         // reusable after the device finishes queued work
    std::vector<const uint16_t*> table;    // host copy of the device's pointer tables
    std::vector<const float*> bias_table;  // and of its bias tables (expert_bias)
  };
  struct Held {
    ExpertOnDevice on;
    int64_t slot = 0;
    ExpertRef key;
    std::shared_ptr<const ExpertWeights> host;  // keeps the host address unique
  };
  Status write_slot(const ExpertWeights& host, int device_index, int64_t slot, Uploader& up,
                    ExpertOnDevice* on) const;
  void set_table_entries(Slots& slots, ExpertRef key, const ExpertOnDevice* on) const;
  Status write_table_entries(int device_index, ExpertRef key) const;

  uint64_t slot_bytes_ = 0;
  uint64_t matrix_part_bytes_ = 0;  // each matrix's share of a slot
  bool expert_bias_ = false;        // slots end with the [2 inter + hidden] f32 biases
  mutable std::shared_mutex slots_mutex_;
  mutable std::vector<Slots> slots_;
  mutable std::vector<int64_t> experts_on_;
  mutable std::unordered_map<const void*, Held> by_host_gate_;
};

}  // namespace dancemoe::backend::cuda
