// Checkpoint: a HuggingFace-layout model directory opened for reading.
//
// open() reads config.json (+ generation_config.json), the safetensors
// headers of model.safetensors or of every shard listed in
// model.safetensors.index.json, and checks that every tensor the
// architecture needs is present with the shape config.json implies -- all
// before any tensor data is read. Tensor bytes are then read on demand with
// read_tensor() (pread; safe from several threads at once). The Checkpoint
// owns its open file descriptors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/base/status.h"
#include "common/base/unique_fd.h"
#include "common/model/expert_manifest.h"
#include "common/model/model_config.h"
#include "common/tensor/dtype.h"

namespace dancemoe {

// Called as weight bytes are read: (bytes done, bytes total).
using LoadProgress = std::function<void(uint64_t done, uint64_t total)>;

struct TensorLocation {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint32_t file_index = 0;
  uint64_t file_offset = 0;  // absolute offset in that file
  uint64_t n_bytes = 0;
};

class Checkpoint {
 public:
  static Result<std::unique_ptr<Checkpoint>> open(const std::filesystem::path& model_dir);

  const std::filesystem::path& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

  // nullptr when the checkpoint has no tensor of that name.
  const TensorLocation* find(std::string_view name) const;
  // A tensor the architecture requires; open() guaranteed it exists.
  const TensorLocation& tensor(TensorRole role, int64_t layer = 0, int64_t expert = 0) const;
  bool has(TensorRole role, int64_t layer = 0, int64_t expert = 0) const;

  // Reads a tensor's bytes into dst (n_bytes of them).
  Status read_tensor(const TensorLocation& tensor, void* dst) const;

  // Stable identity: SHA-256 over the canonical config.json, the sorted
  // tensor index (names, dtypes, shapes) and, when the directory has one,
  // the expert manifest's digests; 32 hex characters.
  const std::string& model_id() const { return model_id_; }
  // The per-expert digests (expert_manifest.h); nullptr without a manifest.
  const ExpertManifest* manifest() const { return manifest_ ? &*manifest_ : nullptr; }

  // Exact bytes of one expert's weights (gate + up + down), and of the dense part.
  uint64_t expert_bytes(int64_t layer, int64_t expert) const;
  uint64_t dense_bytes() const;
  uint64_t total_bytes() const;

  // tokenizer.json beside the weights, when present.
  std::optional<std::filesystem::path> tokenizer_path() const;

 private:
  Checkpoint() = default;
  Status index_file(uint32_t file_index, const std::filesystem::path& path,
                    const std::unordered_map<std::string, std::string>* expected_names);
  Status check_required_tensors() const;
  void compute_model_id(const std::string& canonical_config);

  std::filesystem::path dir_;
  ModelConfig config_;
  std::vector<std::filesystem::path> files_;
  std::vector<UniqueFd> fds_;
  std::unordered_map<std::string, TensorLocation> tensors_;
  std::optional<ExpertManifest> manifest_;
  std::string model_id_;
};

}  // namespace dancemoe
