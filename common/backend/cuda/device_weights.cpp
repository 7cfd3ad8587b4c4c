#include "common/backend/cuda/device_weights.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <tuple>

#include "common/base/align.h"
#include "kernels/interleave.h"
#include "kernels/kernels.h"
#include "kernels/quant_format.h"

namespace dancemoe::backend::cuda {
namespace {

constexpr uint64_t kDeviceAlign = 256;

uint64_t align_up(uint64_t n) { return dancemoe::align_up(n, kDeviceAlign); }

// Offsets of the pieces of one device allocation, 256-byte aligned (16-byte
// vector loads need 16).
class Layout {
 public:
  uint64_t add(uint64_t bytes) {
    const uint64_t at = size_;
    size_ += align_up(bytes);
    return at;
  }
  uint64_t size() const { return size_; }

 private:
  uint64_t size_ = 0;
};

uint64_t matrix_bytes(int64_t rows, int64_t cols) {
  return static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * 2;
}
uint64_t vector_bytes(int64_t n) { return static_cast<uint64_t>(n) * sizeof(float); }

int64_t norm_width(const ModelConfig& c, bool q) {
  if (c.qk_norm == QkNormKind::kPerHead) return c.head_dim;
  return q ? c.q_dim() : c.kv_dim();
}

}  // namespace

// Copies host data to the device, rounding f16 / f32 matrices to bf16 and
// dequantizing block formats to bf16.
class Uploader {
 public:
  Uploader(const CudaDevice& device, uint64_t total, const LoadProgress& progress)
      : device_(device), total_(total), progress_(progress) {}

  Status matrix(const kernels::WeightView& w, void* dst) {
    if (w.layout != kernels::WeightLayout::kRows) {
      // A CPU compute copy (kernels/interleave.h): its rows first.
      std::vector<uint8_t> rows(
          static_cast<size_t>(w.rows * kernels::weight_row_bytes(w.type, w.cols)));
      kernels::copy_as_rows(w, rows.data());
      return matrix(kernels::WeightView{rows.data(), w.type, w.rows, w.cols}, dst);
    }
    const uint64_t n = static_cast<uint64_t>(w.rows) * static_cast<uint64_t>(w.cols);
    const kernels::CpuKernels& k = kernels::cpu_kernels();
    if (w.type == kernels::WeightType::kBF16) return copy(dst, w.data, n * 2);
    staging_.resize(n);
    if (w.type == kernels::WeightType::kF32) {
      k.f32_to_bf16(static_cast<const float*>(w.data), static_cast<int64_t>(n), staging_.data());
    } else if (kernels::is_block_format(w.type)) {
      // GGUF blocks: dequantized exactly, then rounded to bf16, a row at a
      // time (the GPU computes in bf16; kernels/cuda/matmul_quant.cuh could
      // keep them quantized -- see docs/quantization.md).
      std::vector<float> row(static_cast<size_t>(w.cols));
      const int64_t row_bytes = kernels::weight_row_bytes(w.type, w.cols);
      for (int64_t r = 0; r < w.rows; ++r) {
        k.dequantize(w.type, static_cast<const uint8_t*>(w.data) + r * row_bytes, w.cols,
                     row.data());
        k.f32_to_bf16(row.data(), w.cols, staging_.data() + r * w.cols);
      }
    } else {
      // f16 -> f32 -> bf16, in pieces.
      constexpr uint64_t kPiece = 1 << 16;
      std::vector<float> wide(kPiece);
      const auto* src = static_cast<const uint16_t*>(w.data);
      for (uint64_t at = 0; at < n; at += kPiece) {
        const int64_t m = static_cast<int64_t>(std::min(kPiece, n - at));
        k.f16_to_f32(src + at, m, wide.data());
        k.f32_to_bf16(wide.data(), m, staging_.data() + at);
      }
    }
    return copy(dst, staging_.data(), n * 2);
  }

  Status vector(const float* src, int64_t n, void* dst) { return copy(dst, src, vector_bytes(n)); }

  Status copy(void* dst, const void* src, uint64_t bytes) {
    device_.make_current();
    const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return internal_error(device_.label() +
                            ": copying weights to the device: " + kernels::cuda::error_string(e));
    }
    done_ += bytes;
    if (progress_) progress_(done_, total_);
    return Status::ok();
  }

 private:
  const CudaDevice& device_;
  uint64_t total_;
  uint64_t done_ = 0;
  const LoadProgress& progress_;
  std::vector<uint16_t> staging_;
};

namespace {

struct LayerOffsets {
  uint64_t input_norm, post_norm, q, k, v, o, q_bias, k_bias, v_bias, o_bias, q_norm, k_norm, sinks;
  uint64_t q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b;  // latent attention
  uint64_t router, router_bias, choice_bias;
  uint64_t gate, up, down, table;  // dense MLP layers
  uint64_t shared_gate, shared_up, shared_down, shared_table, shared_expert_gate;
};

// Where each of one layer's tensors goes (every offset the layer does not
// use is left 0). The one place that decides what the device holds, for
// lay_out_dense() and dense_bytes() alike.
LayerOffsets lay_out_layer(const ModelConfig& c, bool is_moe, Layout& layout) {
  LayerOffsets o{};
  const int64_t H = c.hidden_size;
  o.input_norm = layout.add(vector_bytes(H));
  o.post_norm = layout.add(vector_bytes(H));
  if (c.attention == AttentionKind::kLatent) {
    // The tensors required_tensors() lists for MLA: no k / v, no q/k/v
    // biases or norms (the CPU's latent attention reads none of them).
    if (c.q_lora_rank > 0) {
      o.q_a = layout.add(matrix_bytes(c.q_lora_rank, H));
      o.q_a_norm = layout.add(vector_bytes(c.q_lora_rank));
      o.q_b = layout.add(matrix_bytes(c.q_dim(), c.q_lora_rank));
    } else {
      o.q = layout.add(matrix_bytes(c.q_dim(), H));
    }
    o.kv_a = layout.add(matrix_bytes(c.kv_lora_rank + c.rope_dim(), H));
    o.kv_a_norm = layout.add(vector_bytes(c.kv_lora_rank));
    o.kv_b =
        layout.add(matrix_bytes(c.n_heads * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank));
  } else {
    o.q = layout.add(matrix_bytes(c.q_dim(), H));
    o.k = layout.add(matrix_bytes(c.kv_dim(), H));
    o.v = layout.add(matrix_bytes(c.kv_dim(), H));
    if (c.attention_bias) {
      o.q_bias = layout.add(vector_bytes(c.q_dim()));
      o.k_bias = layout.add(vector_bytes(c.kv_dim()));
      o.v_bias = layout.add(vector_bytes(c.kv_dim()));
    }
    if (c.qk_norm != QkNormKind::kNone) {
      o.q_norm = layout.add(vector_bytes(norm_width(c, true)));
      o.k_norm = layout.add(vector_bytes(norm_width(c, false)));
    }
  }
  o.o = layout.add(matrix_bytes(H, c.attention_out_dim()));
  if (c.attention_out_bias) o.o_bias = layout.add(vector_bytes(H));
  if (c.attention_sinks) o.sinks = layout.add(vector_bytes(c.n_heads));
  if (is_moe) {
    o.router = layout.add(matrix_bytes(c.n_experts, H));
    if (c.router_bias) o.router_bias = layout.add(vector_bytes(c.n_experts));
    if (c.router_choice_bias) o.choice_bias = layout.add(vector_bytes(c.n_experts));
    if (c.shared_intermediate_size > 0) {
      o.shared_gate = layout.add(matrix_bytes(c.shared_intermediate_size, H));
      o.shared_up = layout.add(matrix_bytes(c.shared_intermediate_size, H));
      o.shared_down = layout.add(matrix_bytes(H, c.shared_intermediate_size));
      o.shared_table = layout.add(3 * sizeof(void*));
      if (c.shared_expert_gate) o.shared_expert_gate = layout.add(matrix_bytes(1, H));
    }
  } else {
    o.gate = layout.add(matrix_bytes(c.dense_intermediate_size, H));
    o.up = layout.add(matrix_bytes(c.dense_intermediate_size, H));
    o.down = layout.add(matrix_bytes(H, c.dense_intermediate_size));
    o.table = layout.add(3 * sizeof(void*));
  }
  return o;
}

}  // namespace

struct DeviceWeights::DenseLayout {
  Layout layout;
  std::vector<std::pair<const kernels::WeightView*, uint64_t>> matrices;
  std::vector<std::tuple<const float*, int64_t, uint64_t>> vectors;
  std::vector<LayerOffsets> offsets;  // per layer
  uint64_t embed_at = 0;
  uint64_t lm_head_at = 0;  // embed_at when the embeddings are tied
  uint64_t final_norm_at = 0;
};

// Lays out the dense part: one allocation, every tensor at an aligned offset.
DeviceWeights::DenseLayout DeviceWeights::lay_out_dense(const ModelConfig& c,
                                                        const DenseWeights& dense) {
  DenseLayout out;
  Layout& layout = out.layout;
  auto& matrices = out.matrices;
  auto& vectors = out.vectors;
  out.embed_at = layout.add(matrix_bytes(c.vocab_size, c.hidden_size));
  matrices.push_back({&dense.embed(), out.embed_at});
  const bool tied = dense.lm_head().data == dense.embed().data;
  out.lm_head_at = out.embed_at;
  if (!tied) {
    out.lm_head_at = layout.add(matrix_bytes(c.vocab_size, c.hidden_size));
    matrices.push_back({&dense.lm_head(), out.lm_head_at});
  }
  out.final_norm_at = layout.add(vector_bytes(c.hidden_size));
  vectors.emplace_back(dense.final_norm(), c.hidden_size, out.final_norm_at);
  out.offsets.resize(static_cast<size_t>(c.n_layers));
  const int64_t H = c.hidden_size;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = dense.layer(l);
    const AttentionWeights& aw = lw.attention;
    const LayerOffsets o = lay_out_layer(c, lw.is_moe, layout);
    out.offsets[static_cast<size_t>(l)] = o;
    vectors.emplace_back(lw.input_norm, H, o.input_norm);
    vectors.emplace_back(lw.post_attention_norm, H, o.post_norm);
    if (c.attention == AttentionKind::kLatent) {
      if (c.q_lora_rank > 0) {
        matrices.push_back({&aw.q_a, o.q_a});
        vectors.emplace_back(aw.q_a_norm, c.q_lora_rank, o.q_a_norm);
        matrices.push_back({&aw.q_b, o.q_b});
      } else {
        matrices.push_back({&aw.q, o.q});
      }
      matrices.push_back({&aw.kv_a, o.kv_a});
      vectors.emplace_back(aw.kv_a_norm, c.kv_lora_rank, o.kv_a_norm);
      matrices.push_back({&aw.kv_b, o.kv_b});
    } else {
      matrices.push_back({&aw.q, o.q});
      matrices.push_back({&aw.k, o.k});
      matrices.push_back({&aw.v, o.v});
      if (c.attention_bias) {
        vectors.emplace_back(aw.q_bias, c.q_dim(), o.q_bias);
        vectors.emplace_back(aw.k_bias, c.kv_dim(), o.k_bias);
        vectors.emplace_back(aw.v_bias, c.kv_dim(), o.v_bias);
      }
      if (c.qk_norm != QkNormKind::kNone) {
        vectors.emplace_back(aw.q_norm, norm_width(c, true), o.q_norm);
        vectors.emplace_back(aw.k_norm, norm_width(c, false), o.k_norm);
      }
    }
    matrices.push_back({&aw.o, o.o});
    if (c.attention_out_bias) vectors.emplace_back(aw.o_bias, H, o.o_bias);
    if (c.attention_sinks) vectors.emplace_back(aw.sinks, c.n_heads, o.sinks);
    if (lw.is_moe) {
      matrices.push_back({&lw.router, o.router});
      if (c.router_bias) vectors.emplace_back(lw.router_bias, c.n_experts, o.router_bias);
      if (c.router_choice_bias) {
        vectors.emplace_back(lw.router_choice_bias, c.n_experts, o.choice_bias);
      }
      if (c.shared_intermediate_size > 0) {
        matrices.push_back({&lw.shared_gate, o.shared_gate});
        matrices.push_back({&lw.shared_up, o.shared_up});
        matrices.push_back({&lw.shared_down, o.shared_down});
        if (c.shared_expert_gate)
          matrices.push_back({&lw.shared_expert_gate, o.shared_expert_gate});
      }
    } else {
      matrices.push_back({&lw.dense_gate, o.gate});
      matrices.push_back({&lw.dense_up, o.up});
      matrices.push_back({&lw.dense_down, o.down});
    }
  }

  return out;
}

uint64_t DeviceWeights::dense_bytes(const ModelConfig& c) {
  Layout l;
  l.add(matrix_bytes(c.vocab_size, c.hidden_size));
  if (!c.tie_word_embeddings) l.add(matrix_bytes(c.vocab_size, c.hidden_size));
  l.add(vector_bytes(c.hidden_size));
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    lay_out_layer(c, c.layer_is_moe[static_cast<size_t>(layer)], l);
  }
  return l.size();
}

namespace {

// One pointer table: a pointer per (layer, projection, expert).
uint64_t one_expert_table_bytes(const ModelConfig& c) {
  return static_cast<uint64_t>(c.n_layers) * 3 *
         static_cast<uint64_t>(std::max<int64_t>(c.n_experts, 1)) * sizeof(void*);
}

}  // namespace

uint64_t DeviceWeights::expert_table_bytes(const ModelConfig& c) {
  return one_expert_table_bytes(c) * (c.expert_bias ? 2 : 1);
}

uint64_t DeviceWeights::expert_bytes(const ModelConfig& c) {
  const uint64_t biases =
      c.expert_bias ? align_up(vector_bytes(2 * c.moe_intermediate_size + c.hidden_size)) : 0;
  return 3 * align_up(matrix_bytes(c.moe_intermediate_size, c.hidden_size)) + biases;
}

Status DeviceWeights::upload_dense(const UploadPlan& plan, const DenseLayout& layout,
                                   uint64_t total_bytes) {
  const ModelConfig& c = *plan.config;
  const DenseWeights& dense = *plan.dense;
  CudaDevice& dense_dev = *plan.devices[static_cast<size_t>(plan.dense_device)];
  DMOE_ASSIGN_OR_RETURN(DeviceMemory dense_mem,
                        dense_dev.allocate(layout.layout.size(), "dense weights"));
  auto* base = dense_mem.as<uint8_t>();
  auto at = [&](uint64_t offset) { return base + offset; };
  Uploader dense_up(dense_dev, total_bytes, plan.progress);
  for (const auto& [view, offset] : layout.matrices)
    DMOE_RETURN_IF_ERROR(dense_up.matrix(*view, at(offset)));
  for (const auto& [src, n, offset] : layout.vectors)
    DMOE_RETURN_IF_ERROR(dense_up.vector(src, n, at(offset)));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerOffsets& o = layout.offsets[static_cast<size_t>(l)];
    const LayerWeights& lw = dense.layer(l);
    DeviceLayer& dl = layers_[static_cast<size_t>(l)];
    dl.input_norm = reinterpret_cast<const float*>(at(o.input_norm));
    dl.post_attention_norm = reinterpret_cast<const float*>(at(o.post_norm));
    DeviceAttention& da = dl.attention;
    if (c.attention == AttentionKind::kLatent) {
      if (c.q_lora_rank > 0) {
        da.q_a = reinterpret_cast<const uint16_t*>(at(o.q_a));
        da.q_a_norm = reinterpret_cast<const float*>(at(o.q_a_norm));
        da.q_b = reinterpret_cast<const uint16_t*>(at(o.q_b));
      } else {
        da.q = reinterpret_cast<const uint16_t*>(at(o.q));
      }
      da.kv_a = reinterpret_cast<const uint16_t*>(at(o.kv_a));
      da.kv_a_norm = reinterpret_cast<const float*>(at(o.kv_a_norm));
      da.kv_b = reinterpret_cast<const uint16_t*>(at(o.kv_b));
    } else {
      da.q = reinterpret_cast<const uint16_t*>(at(o.q));
      da.k = reinterpret_cast<const uint16_t*>(at(o.k));
      da.v = reinterpret_cast<const uint16_t*>(at(o.v));
      if (c.attention_bias) {
        da.q_bias = reinterpret_cast<const float*>(at(o.q_bias));
        da.k_bias = reinterpret_cast<const float*>(at(o.k_bias));
        da.v_bias = reinterpret_cast<const float*>(at(o.v_bias));
      }
      if (c.qk_norm != QkNormKind::kNone) {
        da.q_norm = reinterpret_cast<const float*>(at(o.q_norm));
        da.k_norm = reinterpret_cast<const float*>(at(o.k_norm));
      }
    }
    da.o = reinterpret_cast<const uint16_t*>(at(o.o));
    if (c.attention_out_bias) da.o_bias = reinterpret_cast<const float*>(at(o.o_bias));
    if (c.attention_sinks) dl.attention.sinks = reinterpret_cast<const float*>(at(o.sinks));
    // A one-group pointer table of (gate, up, down) for the grouped kernels.
    auto one_group_table = [&](uint64_t gate, uint64_t up, uint64_t down,
                               uint64_t table_at) -> Result<const uint16_t* const*> {
      const uint16_t* table[3] = {reinterpret_cast<const uint16_t*>(at(gate)),
                                  reinterpret_cast<const uint16_t*>(at(up)),
                                  reinterpret_cast<const uint16_t*>(at(down))};
      DMOE_RETURN_IF_ERROR(dense_up.copy(at(table_at), table, sizeof table));
      return reinterpret_cast<const uint16_t* const*>(at(table_at));
    };
    if (lw.is_moe) {
      dl.router = reinterpret_cast<const uint16_t*>(at(o.router));
      if (c.router_bias) dl.router_bias = reinterpret_cast<const float*>(at(o.router_bias));
      if (c.router_choice_bias) {
        dl.router_choice_bias = reinterpret_cast<const float*>(at(o.choice_bias));
      }
      if (c.shared_intermediate_size > 0) {
        DMOE_ASSIGN_OR_RETURN(
            const uint16_t* const* t,
            one_group_table(o.shared_gate, o.shared_up, o.shared_down, o.shared_table));
        dl.shared_gate = t;
        dl.shared_up = t + 1;
        dl.shared_down = t + 2;
        if (c.shared_expert_gate) {
          dl.shared_expert_gate = reinterpret_cast<const uint16_t*>(at(o.shared_expert_gate));
        }
      }
    } else {
      DMOE_ASSIGN_OR_RETURN(const uint16_t* const* t,
                            one_group_table(o.gate, o.up, o.down, o.table));
      dl.dense_gate = t;
      dl.dense_up = t + 1;
      dl.dense_down = t + 2;
    }
  }
  embed_ = reinterpret_cast<const uint16_t*>(at(layout.embed_at));
  lm_head_ = reinterpret_cast<const uint16_t*>(at(layout.lm_head_at));
  final_norm_ = reinterpret_cast<const float*>(at(layout.final_norm_at));
  memory_.push_back(std::move(dense_mem));

  return Status::ok();
}

Status DeviceWeights::upload_experts(const UploadPlan& plan,
                                     const std::vector<std::vector<size_t>>& on_device,
                                     uint64_t total_bytes) {
  const ModelConfig& c = *plan.config;
  const int n_devices = static_cast<int>(plan.devices.size());
  slot_bytes_ = expert_bytes(c);
  matrix_part_bytes_ = align_up(matrix_bytes(c.moe_intermediate_size, c.hidden_size));
  expert_bias_ = c.expert_bias;
  const uint64_t one_table_bytes = one_expert_table_bytes(c);
  const uint64_t table_bytes = expert_table_bytes(c);
  tables_.resize(static_cast<size_t>(n_devices));
  bias_tables_.assign(static_cast<size_t>(n_devices), nullptr);
  slots_.resize(static_cast<size_t>(n_devices));
  experts_on_.assign(static_cast<size_t>(n_devices), 0);
  const int64_t E = std::max<int64_t>(c.n_experts, 1);
  for (int d = 0; d < n_devices; ++d) {
    CudaDevice& dev = *plan.devices[static_cast<size_t>(d)];
    const std::vector<size_t>& mine = on_device[static_cast<size_t>(d)];
    Slots& slots = slots_[static_cast<size_t>(d)];
    slots.capacity = static_cast<int64_t>(mine.size());
    if (static_cast<size_t>(d) < plan.expert_slots.size()) {
      slots.capacity = std::max(slots.capacity, plan.expert_slots[static_cast<size_t>(d)]);
    }
    const uint64_t bytes = static_cast<uint64_t>(slots.capacity) * slot_bytes_ + table_bytes;
    DMOE_ASSIGN_OR_RETURN(DeviceMemory mem,
                          dev.allocate(bytes, "expert weights (" + std::to_string(slots.capacity) +
                                                  " expert slots)"));
    slots.base = mem.as<uint8_t>();
    slots.table.assign(static_cast<size_t>(c.n_layers * 3 * E), nullptr);
    uint8_t* table_dst = slots.base + static_cast<uint64_t>(slots.capacity) * slot_bytes_;
    tables_[static_cast<size_t>(d)] = reinterpret_cast<const uint16_t* const*>(table_dst);
    if (expert_bias_) {
      slots.bias_table.assign(static_cast<size_t>(c.n_layers * 3 * E), nullptr);
      bias_tables_[static_cast<size_t>(d)] =
          reinterpret_cast<const float* const*>(table_dst + one_table_bytes);
    }
    memory_.push_back(std::move(mem));
    Uploader up(dev, total_bytes, plan.progress);
    for (size_t j = 0; j < mine.size(); ++j) {
      const ExpertRef key = plan.resident[mine[j]];
      std::shared_ptr<const ExpertWeights> ew = plan.experts->get(key);
      if (ew == nullptr) {
        return failed_precondition("expert " + std::to_string(key.expert) + " of layer " +
                                   std::to_string(key.layer) + " is not resident on the host");
      }
      Held held;
      held.slot = static_cast<int64_t>(j);
      held.key = key;
      DMOE_RETURN_IF_ERROR(write_slot(*ew, d, held.slot, up, &held.on));
      set_table_entries(slots, key, &held.on);
      held.host = std::move(ew);
      by_host_gate_[held.host->gate.data] = std::move(held);
    }
    for (int64_t i = slots.capacity; i-- > static_cast<int64_t>(mine.size());) {
      slots.free.push_back(i);
    }
    DMOE_RETURN_IF_ERROR(
        up.copy(table_dst, slots.table.data(), slots.table.size() * sizeof(void*)));
    if (expert_bias_) {
      DMOE_RETURN_IF_ERROR(up.copy(table_dst + one_table_bytes, slots.bias_table.data(),
                                   slots.bias_table.size() * sizeof(void*)));
    }
    experts_on_[static_cast<size_t>(d)] = static_cast<int64_t>(mine.size());
  }
  return Status::ok();
}

// Copies one expert's three matrices (bf16 on the device) and, with expert
// biases, its [gate, up, down] biases (f32, after the matrices) into `slot`
// of device `device_index`; `on` receives where they went.
Status DeviceWeights::write_slot(const ExpertWeights& host, int device_index, int64_t slot,
                                 Uploader& up, ExpertOnDevice* on) const {
  uint8_t* dst =
      slots_[static_cast<size_t>(device_index)].base + static_cast<uint64_t>(slot) * slot_bytes_;
  const uint64_t part = matrix_part_bytes_;
  DMOE_RETURN_IF_ERROR(up.matrix(host.gate, dst));
  DMOE_RETURN_IF_ERROR(up.matrix(host.up, dst + part));
  DMOE_RETURN_IF_ERROR(up.matrix(host.down, dst + 2 * part));
  if (expert_bias_) {
    const int64_t inter = host.gate.rows, hidden = host.down.rows;
    if (host.ffn.gate_bias == nullptr || host.ffn.up_bias == nullptr ||
        host.ffn.down_bias == nullptr) {
      return failed_precondition("expert " + std::to_string(host.key.expert) + " of layer " +
                                 std::to_string(host.key.layer) +
                                 " has no biases, which the model's experts need");
    }
    auto* biases = reinterpret_cast<float*>(dst + 3 * part);
    DMOE_RETURN_IF_ERROR(up.vector(host.ffn.gate_bias, inter, biases));
    DMOE_RETURN_IF_ERROR(up.vector(host.ffn.up_bias, inter, biases + inter));
    DMOE_RETURN_IF_ERROR(up.vector(host.ffn.down_bias, hidden, biases + 2 * inter));
    on->gate_bias = biases;
    on->up_bias = biases + inter;
    on->down_bias = biases + 2 * inter;
  }
  on->device_index = device_index;
  on->gate = reinterpret_cast<const uint16_t*>(dst);
  on->up = reinterpret_cast<const uint16_t*>(dst + part);
  on->down = reinterpret_cast<const uint16_t*>(dst + 2 * part);
  on->inter = host.gate.rows;
  on->host_up = host.up.data;
  on->host_down = host.down.data;
  return Status::ok();
}

// Points the host copy of a device's tables at `on` for `key` (null: clears).
void DeviceWeights::set_table_entries(Slots& slots, ExpertRef key, const ExpertOnDevice* on) const {
  const int64_t E = std::max<int64_t>(n_experts_, 1);
  const size_t row = static_cast<size_t>(key.layer) * 3 * static_cast<size_t>(E);
  const auto at = [&](int64_t part) { return row + static_cast<size_t>(part * E + key.expert); };
  slots.table[at(0)] = on ? on->gate : nullptr;
  slots.table[at(1)] = on ? on->up : nullptr;
  slots.table[at(2)] = on ? on->down : nullptr;
  if (!expert_bias_) return;
  slots.bias_table[at(0)] = on ? on->gate_bias : nullptr;
  slots.bias_table[at(1)] = on ? on->up_bias : nullptr;
  slots.bias_table[at(2)] = on ? on->down_bias : nullptr;
}

// Copies the three table entries of `key` on device `device_index` (and
// its three bias-table entries) from the host copy of the tables to the
// device.
Status DeviceWeights::write_table_entries(int device_index, ExpertRef key) const {
  const Slots& slots = slots_[static_cast<size_t>(device_index)];
  const CudaDevice& dev = *devices_[static_cast<size_t>(device_index)];
  const LoadProgress no_progress;
  Uploader up(dev, 0, no_progress);
  const int64_t E = std::max<int64_t>(n_experts_, 1);
  const size_t row = static_cast<size_t>(key.layer) * 3 * static_cast<size_t>(E);
  auto* table = const_cast<const uint16_t**>(tables_[static_cast<size_t>(device_index)]);
  for (int64_t part = 0; part < 3; ++part) {
    const size_t at = row + static_cast<size_t>(part * E + key.expert);
    DMOE_RETURN_IF_ERROR(up.copy(table + at, &slots.table[at], sizeof(void*)));
    if (expert_bias_) {
      auto* bias_table = const_cast<const float**>(bias_tables_[static_cast<size_t>(device_index)]);
      DMOE_RETURN_IF_ERROR(up.copy(bias_table + at, &slots.bias_table[at], sizeof(void*)));
    }
  }
  return Status::ok();
}

Status DeviceWeights::install(const std::shared_ptr<const ExpertWeights>& host,
                              int device_index) const {
  if (device_index < 0 || static_cast<size_t>(device_index) >= slots_.size()) {
    return invalid_argument("no GPU index " + std::to_string(device_index));
  }
  std::unique_lock<std::shared_mutex> lock(slots_mutex_);
  if (by_host_gate_.count(host->gate.data) != 0) return Status::ok();
  Slots& slots = slots_[static_cast<size_t>(device_index)];
  const CudaDevice& dev = *devices_[static_cast<size_t>(device_index)];
  if (slots.free.empty() && !slots.released.empty()) {
    // Kernels queued before those releases may still read the slots.
    dev.make_current();
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      cudaGetLastError();
      return internal_error(dev.label() + ": waiting for the device before reusing expert slots: " +
                            kernels::cuda::error_string(e));
    }
    slots.free.insert(slots.free.end(), slots.released.begin(), slots.released.end());
    slots.released.clear();
  }
  if (slots.free.empty()) {
    return resource_exhausted(dev.label() + ": all " + std::to_string(slots.capacity) +
                              " expert slots are taken (" +
                              std::to_string(slot_bytes_ * static_cast<uint64_t>(slots.capacity)) +
                              " bytes of expert memory)");
  }
  Held held;
  held.slot = slots.free.back();
  held.key = host->key;
  const LoadProgress no_progress;
  Uploader up(dev, 0, no_progress);
  DMOE_RETURN_IF_ERROR(write_slot(*host, device_index, held.slot, up, &held.on));
  set_table_entries(slots, held.key, &held.on);
  DMOE_RETURN_IF_ERROR(write_table_entries(device_index, held.key));
  slots.free.pop_back();
  held.host = host;
  by_host_gate_[host->gate.data] = std::move(held);
  ++experts_on_[static_cast<size_t>(device_index)];
  return Status::ok();
}

void DeviceWeights::release(const ExpertWeights& host) const {
  std::unique_lock<std::shared_mutex> lock(slots_mutex_);
  const auto it = by_host_gate_.find(host.gate.data);
  if (it == by_host_gate_.end()) return;
  const int d = it->second.on.device_index;
  Slots& slots = slots_[static_cast<size_t>(d)];
  const ExpertRef key = it->second.key;
  set_table_entries(slots, key, nullptr);
  // A table entry left pointing at the slot is harmless until it is reused,
  // and reuse waits for the device; still, clear it so the fused path (a
  // device holding every expert) never sees a stale expert.
  (void)write_table_entries(d, key);
  slots.released.push_back(it->second.slot);
  --experts_on_[static_cast<size_t>(d)];
  by_host_gate_.erase(it);
}

Result<std::shared_ptr<const DeviceWeights>> DeviceWeights::upload(const UploadPlan& plan) {
  const ModelConfig& c = *plan.config;
  std::shared_ptr<DeviceWeights> w(new DeviceWeights());
  w->devices_ = plan.devices;
  w->dense_device_ = plan.dense_device;
  w->n_layers_ = c.n_layers;
  w->n_experts_ = c.n_experts;
  w->layers_.resize(static_cast<size_t>(c.n_layers));
  const DenseLayout layout = lay_out_dense(c, *plan.dense);
  std::vector<std::vector<size_t>> on_device(plan.devices.size());
  for (size_t i = 0; i < plan.resident.size(); ++i) {
    on_device[static_cast<size_t>(plan.expert_device[i])].push_back(i);
  }
  uint64_t total_bytes = layout.layout.size();
  for (const std::vector<size_t>& experts : on_device) {
    total_bytes += experts.size() * expert_bytes(c);
  }
  DMOE_RETURN_IF_ERROR(w->upload_dense(plan, layout, total_bytes));
  DMOE_RETURN_IF_ERROR(w->upload_experts(plan, on_device, total_bytes));
  return std::shared_ptr<const DeviceWeights>(std::move(w));
}

const uint16_t* const* DeviceWeights::gate_table(int device_index, int64_t layer) const {
  return tables_[static_cast<size_t>(device_index)] + layer * 3 * std::max<int64_t>(n_experts_, 1);
}

const uint16_t* const* DeviceWeights::up_table(int device_index, int64_t layer) const {
  return gate_table(device_index, layer) + std::max<int64_t>(n_experts_, 1);
}

const uint16_t* const* DeviceWeights::down_table(int device_index, int64_t layer) const {
  return gate_table(device_index, layer) + 2 * std::max<int64_t>(n_experts_, 1);
}

bool DeviceWeights::holds_all_experts(int device_index) const {
  std::shared_lock<std::shared_mutex> lock(slots_mutex_);
  int64_t n_moe = 0;
  for (const DeviceLayer& l : layers_) n_moe += l.router != nullptr ? 1 : 0;
  return experts_on_[static_cast<size_t>(device_index)] == n_moe * n_experts_;
}

int64_t DeviceWeights::n_experts_on(int device_index) const {
  std::shared_lock<std::shared_mutex> lock(slots_mutex_);
  return experts_on_[static_cast<size_t>(device_index)];
}

int64_t DeviceWeights::expert_slots(int device_index) const {
  return slots_[static_cast<size_t>(device_index)].capacity;
}

const ExpertOnDevice* DeviceWeights::find_expert(const void* host_gate) const {
  const auto it = by_host_gate_.find(host_gate);
  return it == by_host_gate_.end() ? nullptr : &it->second.on;
}

const float* const* DeviceWeights::gate_bias_table(int device_index, int64_t layer) const {
  const float* const* t =
      bias_tables_.empty() ? nullptr : bias_tables_[static_cast<size_t>(device_index)];
  return t == nullptr ? nullptr : t + layer * 3 * std::max<int64_t>(n_experts_, 1);
}

const float* const* DeviceWeights::up_bias_table(int device_index, int64_t layer) const {
  const float* const* t = gate_bias_table(device_index, layer);
  return t == nullptr ? nullptr : t + std::max<int64_t>(n_experts_, 1);
}

const float* const* DeviceWeights::down_bias_table(int device_index, int64_t layer) const {
  const float* const* t = gate_bias_table(device_index, layer);
  return t == nullptr ? nullptr : t + 2 * std::max<int64_t>(n_experts_, 1);
}

}  // namespace dancemoe::backend::cuda
