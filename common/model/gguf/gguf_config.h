// The model description of a GGUF file, both ways: llama.cpp's metadata
// keys (`general.architecture`, `<arch>.block_count`, ...) <-> the runtime's
// ModelConfig (the tensors' names are gguf_tensor_names.h's).
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
//               attn_kv_b, or the attn_k_b / attn_v_b split newer
//               converters write instead with attention.key_length_mla /
//               value_length_mla (gguf_kv_b.h).
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

}  // namespace dancemoe::gguf
