// Checkpoint's split-checkpoint side (checkpoint.h, split_index.h): a
// directory whose index describes every tensor, with the dense part in
// dense.bin (absent in a header-only copy) and each expert in its own file
// (present or not).
#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "common/model/checkpoint.h"
#include "common/model/split/split_index.h"

namespace dancemoe {
namespace {

TensorLocation location(const SplitTensor& t) {
  TensorLocation loc;
  loc.name = t.name;
  loc.type = t.type;
  loc.shape = t.shape;
  loc.file_offset = t.offset;
  loc.n_bytes = t.n_bytes;
  return loc;
}

}  // namespace

Status Checkpoint::open_split(const std::filesystem::path& dir) {
  DMOE_ASSIGN_OR_RETURN(config_, load_model_config(dir));
  DMOE_ASSIGN_OR_RETURN(SplitIndex index, SplitIndex::read(dir, config_));
  split_ = std::make_unique<SplitIndex>(std::move(index));
  const std::string index_file = (dir / SplitIndex::kFileName).string();
  if (split_->has_dense) {
    const std::filesystem::path dense = dir / SplitIndex::kDenseFile;
    const int fd = ::open(dense.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return not_found(dense.string() + ": cannot open (" + std::strerror(errno) + "); " +
                       index_file + " says the dense part is there");
    }
    files_.push_back(dense);
    fds_.emplace_back(fd);
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(dense, ec);
    if (ec || size < split_->dense_file_bytes()) {
      return invalid_argument(dense.string() + ": has " + std::to_string(ec ? 0 : size) +
                              " bytes, but " + index_file + " places tensors up to byte " +
                              std::to_string(split_->dense_file_bytes()));
    }
  }
  for (const SplitTensor& t : split_->dense) {
    if (tensors_.count(t.name)) {
      return invalid_argument(index_file + ": dense tensor '" + t.name + "' is listed twice");
    }
    tensors_.emplace(t.name, location(t));
  }
  for (const SplitExpertLayer& layer : split_->expert_layers) {
    const std::pair<TensorRole, const SplitTensor*> parts[3] = {
        {TensorRole::kExpertGate, &layer.gate},
        {TensorRole::kExpertUp, &layer.up},
        {TensorRole::kExpertDown, &layer.down}};
    for (int64_t e = 0; e < config_.n_experts; ++e) {
      for (const auto& [role, part] : parts) {
        TensorLocation loc = location(*part);
        loc.name = config_.tensor_name(role, layer.layer, e);
        loc.in_expert_file = {static_cast<int32_t>(layer.layer), static_cast<int32_t>(e)};
        tensors_.emplace(loc.name, std::move(loc));
      }
    }
  }
  DMOE_RETURN_IF_ERROR(check_required_tensors());
  DMOE_ASSIGN_OR_RETURN(manifest_, ExpertManifest::read(dir, config_));
  split_digests_ = split_->digests(config_);
  expert_files_ = std::make_unique<ExpertFiles>(dir / SplitIndex::kExpertsDir);
  compute_model_id();
  if (model_id_ != split_->model_id) {
    return invalid_argument(index_file + ": model_id " + split_->model_id +
                            ", but config.json and the index give " + model_id_ +
                            " (files of another model, or edited since the split)");
  }
  return Status::ok();
}

std::string Checkpoint::location_name(const TensorLocation& t) const {
  if (t.in_expert_file.layer >= 0) return expert_files_->path_of(t.in_expert_file).string();
  if (t.file_index < files_.size()) return files_[t.file_index].string();
  return (dir_ / SplitIndex::kFileName).string();
}

bool Checkpoint::has_dense_weights() const { return split_ == nullptr || split_->has_dense; }

bool Checkpoint::has_expert_weights(ExpertRef key) const {
  if (expert_files_ == nullptr) return true;
  return expert_files_->exists(key, expert_bytes(key.layer, key.expert));
}

std::string Checkpoint::expert_location(ExpertRef key) const {
  if (expert_files_ != nullptr) return expert_files_->path_of(key).string();
  return location_name(tensor(TensorRole::kExpertGate, key.layer, key.expert));
}

const ExpertManifest* Checkpoint::expert_digests() const {
  if (manifest_) return &*manifest_;
  if (split_digests_) return &*split_digests_;
  return nullptr;
}

}  // namespace dancemoe
