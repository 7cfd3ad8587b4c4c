// What llama.cpp calls each tensor of a model in a GGUF file, and the one
// layout in which it stores a tensor differently from HuggingFace:
//   - names: `token_embd.weight`, `blk.N.attn_q.weight`, the merged expert
//     tensors `blk.N.ffn_gate_exps.weight` (matrices: dims [cols, rows,
//     n_experts]; biases: [n, n_experts]; expert e its e-th slab), and the
//     older one-tensor-per-expert names (`blk.N.ffn_gate.E.weight`);
//   - llama.cpp stores the q and k projections of "llama" models with the
//     rows of each head interleaved (it rotates adjacent pairs; HF rotates
//     halves): llama_qk_row() maps a HuggingFace row to its GGUF row.
// The metadata keys are gguf_config.h's. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/model/model_config.h"

namespace dancemoe::gguf {

// "blk.<layer>.<what>": the name of a layer's tensor.
std::string gguf_layer_name(int64_t layer, std::string_view what);
// The GGUF tensor holding a role of `config`'s architecture. Expert roles
// name the merged tensor.
std::string gguf_tensor_name(const ModelConfig& config, TensorRole role, int64_t layer);
// DeepSeek's kv_b split in two by newer converters (gguf_kv_b.h):
// ("blk.N.attn_k_b.weight", "blk.N.attn_v_b.weight").
std::pair<std::string, std::string> gguf_split_kv_b_names(int64_t layer);
// The older llama.cpp naming of one expert's matrix ("blk.N.ffn_gate.E.weight").
std::string gguf_single_expert_name(TensorRole role, int64_t layer, int64_t expert);

// True when the architecture stores q/k rows interleaved (llama).
bool gguf_interleaves_qk(const ModelConfig& config);
// HF row r of a q (n_heads_of_matrix = n_heads) or k (n_kv_heads) matrix ->
// its GGUF row.
int64_t llama_qk_row(int64_t hf_row, int64_t head_dim);

}  // namespace dancemoe::gguf
