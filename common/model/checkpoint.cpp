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
#include "common/model/safetensors.h"

namespace dancemoe {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

// Shard names come from a file we did not write: refuse anything that could
// point outside the model directory.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name.find('\0') == std::string::npos;
}

// Every (role, layer, expert) the architecture needs, in a stable order.
struct RequiredTensor {
  TensorRole role;
  int64_t layer;
  int64_t expert;
};

std::vector<RequiredTensor> required_tensors(const ModelConfig& c) {
  std::vector<RequiredTensor> out = {{TensorRole::kEmbed, 0, 0}, {TensorRole::kFinalNorm, 0, 0}};
  if (!c.tie_word_embeddings) out.push_back({TensorRole::kLmHead, 0, 0});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (TensorRole r : {TensorRole::kInputNorm, TensorRole::kPostAttentionNorm, TensorRole::kQ,
                         TensorRole::kK, TensorRole::kV, TensorRole::kO}) {
      out.push_back({r, l, 0});
    }
    if (c.attention_bias) {
      for (TensorRole r : {TensorRole::kQBias, TensorRole::kKBias, TensorRole::kVBias}) {
        out.push_back({r, l, 0});
      }
    }
    if (c.qk_norm != QkNormKind::kNone) {
      out.push_back({TensorRole::kQNorm, l, 0});
      out.push_back({TensorRole::kKNorm, l, 0});
    }
    if (c.layer_is_moe[static_cast<size_t>(l)]) {
      out.push_back({TensorRole::kRouter, l, 0});
      for (int64_t e = 0; e < c.n_experts; ++e) {
        for (TensorRole r :
             {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
          out.push_back({r, l, e});
        }
      }
    } else {
      for (TensorRole r : {TensorRole::kDenseGate, TensorRole::kDenseUp, TensorRole::kDenseDown}) {
        out.push_back({r, l, 0});
      }
    }
  }
  return out;
}

bool is_expert_role(TensorRole role) {
  return role == TensorRole::kExpertGate || role == TensorRole::kExpertUp ||
         role == TensorRole::kExpertDown;
}

}  // namespace

Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::filesystem::path& model_dir) {
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->dir_ = model_dir;
  if (!std::filesystem::is_directory(model_dir)) {
    return not_found(model_dir.string() + ": model directory does not exist");
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
  DMOE_RETURN_IF_ERROR(ckpt->check_required_tensors());
  DMOE_ASSIGN_OR_RETURN(ckpt->manifest_, ExpertManifest::read(model_dir, ckpt->config_));

  DMOE_ASSIGN_OR_RETURN(std::string config_text, read_file(model_dir / "config.json"));
  ckpt->compute_model_id(nlohmann::json::parse(config_text).dump());
  return ckpt;
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
    TensorLocation loc{t.name,     t.dtype, t.shape, file_index, header.data_offset + t.data_begin,
                       t.n_bytes()};
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
    const std::vector<int64_t> expected = config_.expected_shape(req.role);
    if (loc->shape != expected) {
      return invalid_argument(files_[loc->file_index].string() + ": tensor '" + name +
                              "' has shape " + shape_text(loc->shape) +
                              ", but config.json implies " + shape_text(expected));
    }
  }
  return Status::ok();
}

void Checkpoint::compute_model_id(const std::string& canonical_config) {
  std::vector<const TensorLocation*> sorted;
  for (const auto& [name, loc] : tensors_) sorted.push_back(&loc);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorLocation* a, const TensorLocation* b) { return a->name < b->name; });
  Sha256 hash;
  hash.update("dancemoe-model-id-v1\n");
  hash.update(canonical_config);
  for (const TensorLocation* t : sorted) {
    hash.update("\n" + t->name + " " + std::string(dtype_name(t->dtype)) + " " +
                shape_text(t->shape));
  }
  if (manifest_) {
    const Digest manifest = manifest_->identity();
    hash.update("\nmanifest " + to_hex(manifest));
  }
  std::array<uint8_t, 32> digest = hash.finish();
  model_id_ = to_hex(std::span<const uint8_t>(digest.data(), 16));
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

Status Checkpoint::read_tensor(const TensorLocation& t, void* dst) const {
  const int fd = fds_[t.file_index].get();
  auto* out = static_cast<uint8_t*>(dst);
  uint64_t done = 0;
  while (done < t.n_bytes) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(t.n_bytes - done, 64ull << 20));
    const ssize_t got = ::pread(fd, out + done, chunk, static_cast<off_t>(t.file_offset + done));
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

uint64_t Checkpoint::expert_bytes(int64_t layer, int64_t expert) const {
  return tensor(TensorRole::kExpertGate, layer, expert).n_bytes +
         tensor(TensorRole::kExpertUp, layer, expert).n_bytes +
         tensor(TensorRole::kExpertDown, layer, expert).n_bytes;
}

uint64_t Checkpoint::dense_bytes() const {
  uint64_t bytes = 0;
  for (const RequiredTensor& req : required_tensors(config_)) {
    if (!is_expert_role(req.role)) bytes += tensor(req.role, req.layer, req.expert).n_bytes;
  }
  return bytes;
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t bytes = dense_bytes();
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    if (!config_.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config_.n_experts; ++e) bytes += expert_bytes(l, e);
  }
  return bytes;
}

std::optional<std::filesystem::path> Checkpoint::tokenizer_path() const {
  std::filesystem::path p = dir_ / "tokenizer.json";
  if (std::filesystem::exists(p)) return p;
  return std::nullopt;
}

}  // namespace dancemoe
