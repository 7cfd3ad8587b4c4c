// The model description of a GGUF file, both ways: llama.cpp's metadata
// keys (`general.architecture`, `<arch>.block_count`, ...) and tensor names
// (`blk.N.attn_q.weight`, the merged expert tensors `blk.N.ffn_gate_exps`)
// <-> the runtime's ModelConfig and tensor roles.
//
// Supported, with the keys and names llama.cpp's converter
// (convert_hf_to_gguf.py) writes for them:
//   "qwen3moe"  Qwen3MoeForCausalLM
//   "llama"     MixtralForCausalLM (a "llama" file with experts)
//   "olmoe"     OlmoeForCausalLM
//   "qwen2moe"  Qwen2MoeForCausalLM (shared expert: ffn_*_shexp, its gate
//               ffn_gate_inp_shexp)
//   "deepseek2" DeepseekV2ForCausalLM (expert_gating_func softmax, or absent
//               as in older files) and DeepseekV3ForCausalLM (sigmoid, with
//               exp_probs_b); latent attention as attn_q or attn_q_a /
//               attn_q_a_norm / attn_q_b, attn_kv_a_mqa, attn_kv_a_norm and
//               attn_kv_b. The split attn_k_b / attn_v_b form that newer
//               converters write instead of attn_kv_b is refused (named).
//   "glm4moe"   Glm4MoeForCausalLM (the nextn / MTP blocks at the end are
//               not read; a written file has none)
//   "gpt-oss"   GptOssForCausalLM (attention sinks, sliding window on even
//               layers, expert biases, MXFP4 experts)
// The metadata is turned into the config.json text HuggingFace would have,
// and parsed by the same code as a model directory's config.json (so every
// check there applies to GGUF files too). Layers without a router
// (`ffn_gate_inp`) are dense MLP layers (qwen3moe, qwen2moe; deepseek2 and
// glm4moe say leading_dense_block_count); a file without `output.weight`
// ties the LM head to the embedding. A key with an unsupported value is
// refused naming the key and the values supported.
//
// llama.cpp stores the q and k projections of "llama" models with the rows
// of each head interleaved (it rotates adjacent pairs; HF rotates halves):
// llama_qk_row() maps a HuggingFace row to its GGUF row.
//
// Errors name the file and the key or tensor. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/model/gguf/gguf_file.h"
#include "common/model/gguf/gguf_writer.h"
#include "common/model/model_config.h"

namespace dancemoe::gguf {

// config.json text for the file's metadata and tensors.
Result<std::string> config_json_from_gguf(const File& file, std::string_view file_name);

// ok when a config can be written as GGUF (its architecture has GGUF names
// here and every block it uses has keys); else invalid_argument naming what.
Status gguf_supports(const ModelConfig& config);

// general.architecture for a supported config ("qwen3moe", "llama", ...).
std::string_view gguf_architecture(const ModelConfig& config);

// Writes general.architecture, the <arch>.* keys of `config` and its stop
// tokens (tokenizer.ggml.eos_token_id, a second one as eot_token_id, and
// bos_token_id). Call after tokenizer_to_gguf so that these win.
void config_to_gguf(const ModelConfig& config, GgufWriter* writer);

// The GGUF tensor holding a role of `config`'s architecture. Expert roles
// name the merged tensor (matrices: dims [cols, rows, n_experts]; biases:
// [n, n_experts]; expert e its e-th slab).
std::string gguf_tensor_name(const ModelConfig& config, TensorRole role, int64_t layer);
// The older llama.cpp naming of one expert's matrix ("blk.N.ffn_gate.E.weight").
std::string gguf_single_expert_name(TensorRole role, int64_t layer, int64_t expert);

// True when the architecture stores q/k rows interleaved (llama).
bool gguf_interleaves_qk(const ModelConfig& config);
// HF row r of a q (n_heads_of_matrix = n_heads) or k (n_kv_heads) matrix ->
// its GGUF row.
int64_t llama_qk_row(int64_t hf_row, int64_t head_dim);

}  // namespace dancemoe::gguf
