// GGUF metadata <-> ModelConfig: a config written with config_to_gguf (and
// the tensors llama.cpp would have) reads back to the same ModelConfig;
// unsupported architectures, missing keys and unsupported features are
// errors naming the file and key.
#include "common/model/gguf/gguf_config.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/model/gguf/gguf_tensor_names.h"

namespace dancemoe::gguf {
namespace {

const char* kQwenConfig = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 3,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
  "max_position_embeddings": 2048, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
  "tie_word_embeddings": false, "num_experts": 8, "num_experts_per_tok": 2,
  "moe_intermediate_size": 32, "intermediate_size": 96, "norm_topk_prob": false,
  "mlp_only_layers": [1], "eos_token_id": 7})";

const char* kMixtralConfig = R"({
  "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
  "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 4096, "rope_theta": 1000000.0, "rms_norm_eps": 1e-05,
  "tie_word_embeddings": true, "num_local_experts": 4, "num_experts_per_tok": 2,
  "intermediate_size": 64, "bos_token_id": 1, "eos_token_id": 2})";

ModelConfig parse(const char* json) {
  Result<ModelConfig> c = parse_model_config(json, "config.json");
  REQUIRE_MESSAGE(c.is_ok(), c.status().to_string());
  return std::move(c).value();
}

// The metadata and the tensor infos llama.cpp's converter would write.
File to_file(const ModelConfig& c, GgufWriter& w) {
  config_to_gguf(c, &w);
  w.add_tensor("token_embd.weight", {c.hidden_size, c.vocab_size}, 0);
  if (!c.tie_word_embeddings) w.add_tensor("output.weight", {c.hidden_size, c.vocab_size}, 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (c.layer_is_moe[static_cast<size_t>(l)]) {
      w.add_tensor(gguf_tensor_name(c, TensorRole::kRouter, l), {c.hidden_size, c.n_experts}, 0);
    } else {
      w.add_tensor(gguf_tensor_name(c, TensorRole::kDenseGate, l),
                   {c.hidden_size, c.dense_intermediate_size}, 0);
    }
  }
  Result<File> f = parse_gguf(w.header_bytes(), "model.gguf");
  // Header only: the data section is absent, which the parser reports for
  // files with tensors; the metadata test needs only the infos.
  if (!f.is_ok()) {
    std::vector<uint8_t> bytes = w.header_bytes();
    uint64_t end = 0;
    for (const TensorInfo& t : w.tensors()) end = std::max(end, t.offset + t.n_bytes);
    bytes.resize(bytes.size() + end);
    f = parse_gguf(bytes, "model.gguf");
  }
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  return std::move(f).value();
}

void check_same(const ModelConfig& a, const ModelConfig& b) {
  CHECK(a.hf_architecture == b.hf_architecture);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.hidden_size == b.hidden_size);
  CHECK(a.n_layers == b.n_layers);
  CHECK(a.n_heads == b.n_heads);
  CHECK(a.n_kv_heads == b.n_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.max_position_embeddings == b.max_position_embeddings);
  CHECK(a.rope_theta == doctest::Approx(b.rope_theta));
  CHECK(a.rms_norm_eps == doctest::Approx(b.rms_norm_eps));
  CHECK(a.tie_word_embeddings == b.tie_word_embeddings);
  CHECK(a.n_experts == b.n_experts);
  CHECK(a.n_experts_per_token == b.n_experts_per_token);
  CHECK(a.moe_intermediate_size == b.moe_intermediate_size);
  CHECK(a.norm_topk_prob == b.norm_topk_prob);
  CHECK(a.router_scoring == b.router_scoring);
  CHECK(a.layer_is_moe == b.layer_is_moe);
  CHECK(a.eos_token_ids == b.eos_token_ids);
  CHECK(a.bos_token_id == b.bos_token_id);
}

TEST_CASE("gguf config: Qwen3-MoE and Mixtral configs round-trip through GGUF metadata") {
  for (const char* json : {kQwenConfig, kMixtralConfig}) {
    const ModelConfig original = parse(json);
    GgufWriter w;
    const File f = to_file(original, w);
    Result<std::string> text = config_json_from_gguf(f, "model.gguf");
    REQUIRE_MESSAGE(text.is_ok(), text.status().to_string());
    check_same(original, parse(text->c_str()));
  }
  CHECK(gguf_architecture(parse(kMixtralConfig)) == "llama");
  CHECK(gguf_architecture(parse(kQwenConfig)) == "qwen3moe");
}

TEST_CASE("gguf config: unsupported architectures and features name the key") {
  auto error = [](GgufWriter& w) {
    w.add_tensor("token_embd.weight", {64, 512}, 0);
    std::vector<uint8_t> bytes = w.header_bytes();
    bytes.resize(bytes.size() + 64 * 512 * 4);
    Result<File> f = parse_gguf(bytes, "model.gguf");
    REQUIRE(f.is_ok());
    Result<std::string> text = config_json_from_gguf(*f, "model.gguf");
    REQUIRE_FALSE(text.is_ok());
    return text.status().message();
  };
  {
    GgufWriter w;
    w.set_string("general.architecture", "gemma3");
    CHECK(error(w).find("model.gguf: metadata 'general.architecture': 'gemma3' is not supported") !=
          std::string::npos);
  }
  {
    GgufWriter w;
    w.set_string("general.architecture", "llama");  // a dense llama: no experts
    CHECK(error(w).find("'llama' is not supported") != std::string::npos);
  }
  {
    GgufWriter missing;
    missing.set_string("general.architecture", "qwen3moe");
    missing.set_u32("qwen3moe.embedding_length", 64);
    CHECK(error(missing).find("metadata 'qwen3moe.block_count' is missing") != std::string::npos);
  }
  {
    GgufWriter w;
    config_to_gguf(parse(kQwenConfig), &w);
    w.set_string("qwen3moe.rope.scaling.type", "longrope");
    CHECK(error(w).find("metadata 'qwen3moe.rope.scaling.type': 'longrope' is not supported "
                        "(supported: none, linear, yarn)") != std::string::npos);
  }
  {
    GgufWriter w;
    config_to_gguf(parse(kQwenConfig), &w);
    w.set_u32("qwen3moe.rope.dimension_count", 8);
    CHECK(error(w).find("partial rotary") != std::string::npos);
  }
}

}  // namespace
}  // namespace dancemoe::gguf
