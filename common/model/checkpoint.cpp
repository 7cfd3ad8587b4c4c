#include "common/model/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/base/file_util.h"
#include "common/base/sha256.h"
#include "common/base/shape_text.h"
#include "common/model/gguf/gguf_model.h"
#include "common/model/gguf/gguf_tensor_names.h"
#include "common/model/published_mxfp4.h"
#include "common/model/safetensors.h"
#include "common/model/split/split_index.h"
#include "common/model/stacked_experts.h"
#include "kernels/quant_format.h"

namespace dancemoe {
namespace {

// Shard names come from a file we did not write: refuse anything that could
// point outside the model directory.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name.find('\0') == std::string::npos;
}

}  // namespace

Checkpoint::Checkpoint() = default;
Checkpoint::~Checkpoint() = default;

Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::filesystem::path& model_dir) {
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->dir_ = model_dir;
  if (SplitIndex::present(model_dir)) {
    DMOE_RETURN_IF_ERROR(ckpt->open_split(model_dir));
    return ckpt;
  }
  if (gguf::is_gguf_path(model_dir)) {
    DMOE_RETURN_IF_ERROR(ckpt->open_gguf(model_dir));
    return ckpt;
  }
  if (!std::filesystem::is_directory(model_dir)) {
    return not_found(model_dir.string() +
                     ": model directory does not exist (expected a HuggingFace directory or a "
                     ".gguf file)");
  }
  DMOE_ASSIGN_OR_RETURN(ckpt->config_, load_model_config(model_dir));

  const std::filesystem::path single = model_dir / "model.safetensors";
  const std::filesystem::path index = model_dir / "model.safetensors.index.json";
  if (std::filesystem::exists(index)) {
    DMOE_ASSIGN_OR_RETURN(std::string text, read_file(index));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      return invalid_argument(index.string() + ": not valid JSON (" + e.what() + ")");
    }
    auto map_it = j.is_object() ? j.find("weight_map") : j.end();
    if (map_it == j.end() || !map_it->is_object()) {
      return invalid_argument(index.string() + ": field 'weight_map': expected an object");
    }
    // shard file name -> the tensors the index says it holds
    std::map<std::string, std::unordered_map<std::string, std::string>> shards;
    for (const auto& [name, file] : map_it->items()) {
      if (!file.is_string() || !is_plain_file_name(file.get<std::string>())) {
        return invalid_argument(index.string() + ": weight_map['" + name +
                                "']: expected a file name in the model directory, got " +
                                file.dump());
      }
      shards[file.get<std::string>()][name] = file.get<std::string>();
    }
    for (const auto& [file, names] : shards) {
      const uint32_t file_index = static_cast<uint32_t>(ckpt->files_.size());
      DMOE_RETURN_IF_ERROR(ckpt->index_file(file_index, model_dir / file, &names));
    }
  } else if (std::filesystem::exists(single)) {
    DMOE_RETURN_IF_ERROR(ckpt->index_file(0, single, nullptr));
  } else {
    return not_found(model_dir.string() +
                     ": no model.safetensors or model.safetensors.index.json found");
  }
  if (ckpt->config_.stacked_experts) {
    DMOE_RETURN_IF_ERROR(add_stacked_expert_views(ckpt->config_, ckpt->files_, &ckpt->tensors_));
  }
  DMOE_RETURN_IF_ERROR(ckpt->check_required_tensors());
  DMOE_ASSIGN_OR_RETURN(ckpt->manifest_, ExpertManifest::read(model_dir, ckpt->config_));
  ckpt->compute_model_id();
  return ckpt;
}

// Every tensor of the GGUF model under its HF name; the GgufModel has
// checked presence, types and shapes already.
Status Checkpoint::open_gguf(const std::filesystem::path& path) {
  DMOE_ASSIGN_OR_RETURN(gguf_, gguf::GgufModel::open(path));
  config_ = gguf_->config();
  files_ = gguf_->files();
  for (const RequiredTensor& req : required_tensors(config_)) {
    const gguf::TensorSlice& s = gguf_->tensor(req.role, req.layer, req.expert);
    TensorLocation loc;
    loc.name = config_.tensor_name(req.role, req.layer, req.expert);
    loc.type = s.type;
    loc.shape = s.shape;
    loc.file_index = s.file_index;
    loc.file_offset = s.file_offset;
    loc.n_bytes = s.n_bytes;
    loc.mapped = gguf_->data(s);
    loc.interleaved_qk = s.interleaved_qk;
    if (s.kv_b_split) {
      const auto& [k_b, v_b] = *s.kv_b_split;
      loc.kv_b_split = gguf::SplitKvB{
          {k_b.type, gguf_->data(k_b)}, {v_b.type, gguf_->data(v_b)}, config_.n_heads,
          config_.qk_nope_head_dim,     config_.v_head_dim,           config_.kv_lora_rank};
    }
    tensors_.emplace(loc.name, std::move(loc));
  }
  compute_model_id();
  return Status::ok();
}

Status Checkpoint::index_file(uint32_t file_index, const std::filesystem::path& path,
                              const std::unordered_map<std::string, std::string>* expected_names) {
  DMOE_ASSIGN_OR_RETURN(SafetensorsHeader header, read_safetensors_header(path));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found(path.string() + ": cannot open (" + std::strerror(errno) + ")");
  files_.push_back(path);
  fds_.emplace_back(fd);
  for (const SafetensorsTensor& t : header.tensors) {
    if (tensors_.count(t.name)) {
      return invalid_argument(path.string() + ": tensor '" + t.name + "' is also in another shard");
    }
    TensorLocation loc;
    loc.name = t.name;
    loc.type = to_weight_type(t.dtype);
    loc.raw_u8 = t.dtype == DType::kU8;
    loc.shape = t.shape;
    loc.file_index = file_index;
    loc.file_offset = header.data_offset + t.data_begin;
    loc.n_bytes = t.n_bytes();
    tensors_.emplace(t.name, std::move(loc));
  }
  if (expected_names != nullptr) {
    for (const auto& [name, file] : *expected_names) {
      auto it = tensors_.find(name);
      if (it == tensors_.end() || it->second.file_index != file_index) {
        return invalid_argument("model.safetensors.index.json: weight_map says '" + name +
                                "' is in " + file + ", but that file has no such tensor");
      }
    }
  }
  return Status::ok();
}

Status Checkpoint::check_required_tensors() const {
  for (const RequiredTensor& req : required_tensors(config_)) {
    const std::string name = config_.tensor_name(req.role, req.layer, req.expert);
    const TensorLocation* loc = find(name);
    if (loc == nullptr) {
      return not_found(dir_.string() + ": tensor '" + name + "' required by config.json (" +
                       config_.hf_architecture + ") is missing from the safetensors files");
    }
    if (loc->raw_u8) {
      return invalid_argument(location_name(*loc) + ": tensor '" + name + "' has dtype U8; " +
                              config_.hf_architecture + " needs it as F32, F16 or BF16");
    }
    const std::vector<int64_t> expected = config_.expected_shape(req.role);
    if (loc->shape != expected) {
      return invalid_argument(location_name(*loc) + ": tensor '" + name + "' has shape " +
                              shape_text(loc->shape) + ", but config.json implies " +
                              shape_text(expected));
    }
  }
  return Status::ok();
}

void Checkpoint::compute_model_id() {
  // The fields that define the computation, in a fixed order: the same for
  // a safetensors checkpoint and any GGUF quantization of it.
  const ModelConfig& c = config_;
  nlohmann::ordered_json canonical = {{"architecture", c.hf_architecture},
                                      {"vocab_size", c.vocab_size},
                                      {"hidden_size", c.hidden_size},
                                      {"n_layers", c.n_layers},
                                      {"n_heads", c.n_heads},
                                      {"n_kv_heads", c.n_kv_heads},
                                      {"head_dim", c.head_dim},
                                      {"rope_theta", c.rope_theta},
                                      {"rms_norm_eps", c.rms_norm_eps},
                                      {"tie_word_embeddings", c.tie_word_embeddings},
                                      {"attention_bias", c.attention_bias},
                                      {"qk_norm", static_cast<int>(c.qk_norm)},
                                      {"n_experts", c.n_experts},
                                      {"n_experts_per_token", c.n_experts_per_token},
                                      {"moe_intermediate_size", c.moe_intermediate_size},
                                      {"dense_intermediate_size", c.dense_intermediate_size},
                                      {"norm_topk_prob", c.norm_topk_prob},
                                      {"router_scoring", static_cast<int>(c.router_scoring)},
                                      {"layer_is_moe", c.layer_is_moe}};
  // The blocks added since: only where they differ from the plain model, so
  // the ids of models that use none of them stay what they were.
  const ModelConfig plain;
  auto add_if = [&](const char* key, const auto& value, const auto& default_value) {
    if (value != default_value) canonical[key] = value;
  };
  add_if("attention", static_cast<int>(c.attention), static_cast<int>(plain.attention));
  add_if("attention_out_bias", c.attention_out_bias, plain.attention_out_bias);
  add_if("attention_sinks", c.attention_sinks, plain.attention_sinks);
  add_if("sliding_window", c.sliding_window, plain.sliding_window);
  add_if("layer_sliding", c.layer_sliding, plain.layer_sliding);
  add_if("rotary_dim", c.rotary_dim, plain.rotary_dim);
  add_if("rope_layout", static_cast<int>(c.rope_layout), static_cast<int>(plain.rope_layout));
  if (c.rope_scaling != plain.rope_scaling) {
    const RopeScaling& r = c.rope_scaling;
    canonical["rope_scaling"] = {static_cast<int>(r.type),
                                 r.factor,
                                 r.original_max_position_embeddings,
                                 r.beta_fast,
                                 r.beta_slow,
                                 r.mscale,
                                 r.mscale_all_dim,
                                 r.attention_factor,
                                 r.truncate,
                                 r.low_freq_factor,
                                 r.high_freq_factor};
  }
  add_if("attention_scale_multiplier", c.attention_scale_multiplier,
         plain.attention_scale_multiplier);
  add_if("q_lora_rank", c.q_lora_rank, plain.q_lora_rank);
  add_if("kv_lora_rank", c.kv_lora_rank, plain.kv_lora_rank);
  add_if("qk_nope_head_dim", c.qk_nope_head_dim, plain.qk_nope_head_dim);
  add_if("v_head_dim", c.v_head_dim, plain.v_head_dim);
  add_if("router_bias", c.router_bias, plain.router_bias);
  add_if("router_choice_bias", c.router_choice_bias, plain.router_choice_bias);
  add_if("n_group", c.n_group, plain.n_group);
  add_if("topk_group", c.topk_group, plain.topk_group);
  add_if("group_score", static_cast<int>(c.group_score), static_cast<int>(plain.group_score));
  add_if("routed_scaling_factor", c.routed_scaling_factor, plain.routed_scaling_factor);
  add_if("topk_norm_epsilon", c.topk_norm_epsilon, plain.topk_norm_epsilon);
  add_if("shared_intermediate_size", c.shared_intermediate_size, plain.shared_intermediate_size);
  add_if("shared_expert_gate", c.shared_expert_gate, plain.shared_expert_gate);
  add_if("expert_activation", static_cast<int>(c.expert_activation),
         static_cast<int>(plain.expert_activation));
  if (c.expert_activation == ExpertActivation::kClampedSwiGLU) {
    canonical["swiglu"] = {c.swiglu_alpha, c.swiglu_limit};
  }
  add_if("expert_bias", c.expert_bias, plain.expert_bias);
  std::vector<const TensorLocation*> sorted;
  for (const RequiredTensor& req : required_tensors(config_)) {
    sorted.push_back(&tensor(req.role, req.layer, req.expert));
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorLocation* a, const TensorLocation* b) { return a->name < b->name; });
  Sha256 hash;
  hash.update("dancemoe-model-id-v2\n");
  hash.update(canonical.dump());
  for (const TensorLocation* t : sorted) hash.update("\n" + t->name + " " + shape_text(t->shape));
  if (const std::optional<Digest> manifest = manifest_identity()) {
    hash.update("\nmanifest " + to_hex(*manifest));
  }
  std::array<uint8_t, 32> digest = hash.finish();
  model_id_ = to_hex(std::span<const uint8_t>(digest.data(), 16));
}

std::optional<Digest> Checkpoint::manifest_identity() const {
  if (manifest_) return manifest_->identity();
  if (gguf_) return gguf_->manifest_identity();
  if (split_) return split_->manifest_identity;
  return std::nullopt;
}

kernels::WeightType Checkpoint::expert_type() const {
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    if (config_.layer_is_moe[static_cast<size_t>(l)])
      return tensor(TensorRole::kExpertGate, l).type;
  }
  return tensor(TensorRole::kQ, 0).type;
}

const TensorLocation* Checkpoint::find(std::string_view name) const {
  auto it = tensors_.find(std::string(name));
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorLocation& Checkpoint::tensor(TensorRole role, int64_t layer, int64_t expert) const {
  return tensors_.at(config_.tensor_name(role, layer, expert));
}

bool Checkpoint::has(TensorRole role, int64_t layer, int64_t expert) const {
  return find(config_.tensor_name(role, layer, expert)) != nullptr;
}

void Checkpoint::drop_mapped_pages(const TensorLocation& t) const {
  if (gguf_ == nullptr || t.mapped == nullptr) return;
  gguf_->mapping(t.file_index).drop_pages_around(t.file_offset, t.n_bytes);
}

Status Checkpoint::read_tensor(const TensorLocation& t, void* dst) const {
  if (t.in_expert_file.layer >= 0) {
    const ExpertRef key = t.in_expert_file;
    return expert_files_->read(key, expert_bytes(key.layer, key.expert), t.file_offset, dst,
                               t.n_bytes);
  }
  if (split_ && !split_->has_dense) {
    return failed_precondition(
        dir_.string() +
        " is a header-only copy (dancemoe model headers): it has no weights, not "
        "even tensor '" +
        t.name + "'");
  }
  if (t.kv_b_split) {
    gguf::assemble_kv_b(*t.kv_b_split, static_cast<uint8_t*>(dst));
    return Status::ok();
  }
  if (t.mapped != nullptr) {
    if (!t.interleaved_qk) {
      std::memcpy(dst, t.mapped, t.n_bytes);
      return Status::ok();
    }
    // llama.cpp's q/k row order -> HF's: HF row r is stored at llama_qk_row(r).
    const int64_t rows = t.shape[0];
    const uint64_t row_bytes = t.n_bytes / static_cast<uint64_t>(rows);
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(
          out + static_cast<uint64_t>(r) * row_bytes,
          t.mapped + static_cast<uint64_t>(gguf::llama_qk_row(r, config_.head_dim)) * row_bytes,
          row_bytes);
    }
    return Status::ok();
  }
  if (t.view) return read_view(t, static_cast<uint8_t*>(dst));
  return pread_all(t, t.file_offset, t.n_bytes, static_cast<uint8_t*>(dst));
}

Status Checkpoint::pread_all(const TensorLocation& t, uint64_t offset, uint64_t n_bytes,
                             uint8_t* out) const {
  const int fd = fds_[t.file_index].get();
  uint64_t done = 0;
  while (done < n_bytes) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n_bytes - done, 64ull << 20));
    const ssize_t got = ::pread(fd, out + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return unavailable(files_[t.file_index].string() + ": reading tensor '" + t.name +
                         "' failed at byte " + std::to_string(done) + " (" +
                         (got < 0 ? std::strerror(errno) : "unexpected end of file") + ")");
    }
    done += static_cast<uint64_t>(got);
  }
  return Status::ok();
}

// Reads the stored rows in runs of about 16 MiB (the span from a run's
// first row to its last, strides included) and gathers them.
Status Checkpoint::read_view(const TensorLocation& t, uint8_t* dst) const {
  const TensorView& v = *t.view;
  const int64_t rows = t.shape[0];
  const uint64_t out_row = t.n_bytes / static_cast<uint64_t>(rows);
  const uint64_t n_blocks = v.row_bytes / kPublishedMxfp4BlockBytes;
  const uint64_t stride = std::max<uint64_t>(v.row_stride, 1);
  const int64_t run = std::max<int64_t>(1, static_cast<int64_t>((16ull << 20) / stride));
  std::vector<uint8_t> span, scales;
  for (int64_t r0 = 0; r0 < rows; r0 += run) {
    const int64_t n = std::min(run, rows - r0);
    const uint64_t first = static_cast<uint64_t>(r0);
    const uint64_t last = static_cast<uint64_t>(n - 1);
    span.resize(last * v.row_stride + v.row_bytes);
    DMOE_RETURN_IF_ERROR(
        pread_all(t, t.file_offset + first * v.row_stride, span.size(), span.data()));
    if (v.published_mxfp4) {
      scales.resize(last * v.scales_stride + n_blocks);
      DMOE_RETURN_IF_ERROR(
          pread_all(t, v.scales_offset + first * v.scales_stride, scales.size(), scales.data()));
    }
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* row = span.data() + static_cast<uint64_t>(i) * v.row_stride;
      uint8_t* out = dst + (first + static_cast<uint64_t>(i)) * out_row;
      if (v.published_mxfp4) {
        mxfp4_from_published(row, scales.data() + static_cast<uint64_t>(i) * v.scales_stride,
                             static_cast<int64_t>(n_blocks), out);
      } else {
        std::memcpy(out, row, v.row_bytes);
      }
    }
  }
  return Status::ok();
}

uint64_t Checkpoint::expert_bytes(int64_t layer, int64_t expert) const {
  return tensor(TensorRole::kExpertGate, layer, expert).n_bytes +
         tensor(TensorRole::kExpertUp, layer, expert).n_bytes +
         tensor(TensorRole::kExpertDown, layer, expert).n_bytes;
}

uint64_t Checkpoint::dense_bytes() const {
  uint64_t bytes = 0;
  for (const RequiredTensor& req : required_tensors(config_)) {
    if (!is_expert_matrix_role(req.role)) bytes += tensor(req.role, req.layer, req.expert).n_bytes;
  }
  return bytes;
}

uint64_t Checkpoint::dense_bytes_read(int64_t n_tokens) const {
  const TensorLocation& embed = tensor(TensorRole::kEmbed);
  const uint64_t embed_row = embed.n_bytes / static_cast<uint64_t>(config_.vocab_size);
  const uint64_t unread_embedding = config_.tie_word_embeddings ? 0 : embed.n_bytes;
  return dense_bytes() - unread_embedding + static_cast<uint64_t>(n_tokens) * embed_row;
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t bytes = dense_bytes();
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    if (!config_.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config_.n_experts; ++e) bytes += expert_bytes(l, e);
  }
  return bytes;
}

void Checkpoint::prefer_huge_pages() const {
  if (gguf_) gguf_->prefer_huge_pages();
}

std::optional<std::filesystem::path> Checkpoint::tokenizer_path() const {
  if (gguf_ != nullptr) return std::nullopt;
  std::filesystem::path p = dir_ / "tokenizer.json";
  if (std::filesystem::exists(p)) return p;
  return std::nullopt;
}

Result<std::unique_ptr<tokenizer::Tokenizer>> Checkpoint::load_tokenizer() const {
  if (gguf_ != nullptr) {
    if (!gguf_->tokenizer()) {
      return not_found(files_[0].string() + ": the GGUF file has no tokenizer (tokenizer.ggml.*)");
    }
    return tokenizer::Tokenizer::from_json_text(gguf_->tokenizer()->tokenizer_json,
                                                gguf_->tokenizer()->tokenizer_config_json,
                                                files_[0].string() + " (tokenizer metadata)");
  }
  const std::optional<std::filesystem::path> path = tokenizer_path();
  if (!path) return not_found(dir_.string() + ": no tokenizer.json");
  return tokenizer::Tokenizer::load(*path);
}

std::string Checkpoint::tokenizer_source() const {
  if (gguf_ != nullptr) return gguf_->tokenizer() ? files_[0].string() + " (metadata)" : "";
  const std::optional<std::filesystem::path> path = tokenizer_path();
  return path ? path->string() : "";
}

}  // namespace dancemoe
