// DeepSeek's kv_b_proj as newer llama.cpp converters store it. For their
// absorbed latent-attention path they split HF's kv_b_proj
// ([n_heads * (nope + v_dim), rank]: per head the nope rows W_UK[h], then
// the v_dim rows W_UV[h]) into two tensors and drop the original:
//   blk.N.attn_k_b.weight  dims [nope, rank, n_heads]   -- W_UK[h] transposed
//   blk.N.attn_v_b.weight  dims [rank, v_dim, n_heads]  -- W_UV[h] as it was
// with the metadata keys attention.key_length_mla (nope + rope) and
// attention.value_length_mla (v_dim), and key_length / value_length /
// head_count_kv describing the latent cache as one shared head.
//
// The runtime keeps kv_b whole, in HF's layout (cpu_latent_attention.cpp
// reads W_UK[h] and W_UV[h] as rows), so it is reassembled once at load:
// transposing k_b needs its values, so a file whose parts are block-quantized
// gives an f32 kv_b (exact: the dequantized values, not re-quantized); parts
// of one float type (f32, f16, bf16) keep that type, bit for bit.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::gguf {

// One of the two stored parts: its format and its bytes (all n_heads slabs).
struct KvBPart {
  kernels::WeightType type = kernels::WeightType::kF32;
  const uint8_t* data = nullptr;
};

struct SplitKvB {
  KvBPart k_b;  // [n_heads][rank][nope]
  KvBPart v_b;  // [n_heads][v_dim][rank]
  int64_t n_heads = 0;
  int64_t nope = 0;  // qk_nope_head_dim
  int64_t v_dim = 0;
  int64_t rank = 0;  // kv_lora_rank
};

// The type the reassembled kv_b is held in (see above).
kernels::WeightType assembled_kv_b_type(kernels::WeightType k_b, kernels::WeightType v_b);

// Writes kv_b, [n_heads * (nope + v_dim), rank] in
// assembled_kv_b_type(k_b.type, v_b.type), to `out`
// (rows * weight_row_bytes(type, rank) bytes).
void assemble_kv_b(const SplitKvB& split, uint8_t* out);

}  // namespace dancemoe::gguf
