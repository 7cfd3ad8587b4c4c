// GgufModel: a GGUF checkpoint opened for reading -- one file, a directory
// holding one, or a split set (`name-00001-of-00003.gguf`, as llama.cpp's
// gguf-split writes it) -- memory-mapped and validated before any weight is
// used:
//   - each file's header (gguf_file.h);
//   - for a split set: every part present, each naming its index and the
//     same count (split.no / split.count), tensors not repeated across parts,
//     their number equal to split.tensors.count;
//   - the metadata turned into a ModelConfig (gguf_config.h) for a
//     supported architecture;
//   - every tensor the architecture needs present, of a type the runtime
//     computes with, with the shape the metadata implies (experts: the 3-D
//     merged tensors of current llama.cpp, or the older one-tensor-per-expert
//     names; gguf_tensor_names.h; DeepSeek's kv_b whole or split in two,
//     gguf_kv_b.h).
// Each error names the file and the key or tensor at fault.
//
// Tensors are then handed out as slices of the mappings: an expert is the
// e-th slab of its merged tensor. Immutable after open(); thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/base/mapped_file.h"
#include "common/base/status.h"
#include "common/model/expert_manifest.h"
#include "common/model/gguf/gguf_file.h"
#include "common/model/gguf/gguf_tokenizer.h"
#include "common/model/model_config.h"
#include "kernels/kernels.h"

namespace dancemoe::gguf {

// Metadata written by `dancemoe quantize`: the identity (64 hex characters)
// of the expert manifest of the checkpoint the file was made from
// (expert_manifest.h), so that the file keeps its source's model id.
inline constexpr const char* kKeyManifestIdentity = "dancemoe.manifest_identity";

// One matrix or vector of the model inside a mapped file.
struct TensorSlice {
  std::string name;  // GGUF name, with "[expert e]" for a slab of a merged tensor
  kernels::WeightType type = kernels::WeightType::kF32;
  std::vector<int64_t> shape;  // HF order: [rows, cols] or [n]
  uint32_t file_index = 0;
  uint64_t file_offset = 0;  // absolute, in that file
  uint64_t n_bytes = 0;
  // q / k rows of "llama" models are stored interleaved (gguf_tensor_names.h):
  // readers must reorder them to HF order.
  bool interleaved_qk = false;
  // DeepSeek's kv_b stored split (gguf_kv_b.h): the attn_k_b and attn_v_b
  // tensors it is assembled from; `type` and `n_bytes` are then the
  // assembled matrix's, and file_offset means nothing.
  struct Part {
    std::string name;
    kernels::WeightType type = kernels::WeightType::kF32;
    uint32_t file_index = 0;
    uint64_t file_offset = 0;
  };
  std::optional<std::pair<Part, Part>> kv_b_split;  // (k_b, v_b)
};

class GgufModel {
 public:
  // `path`: a .gguf file (the first part of a split set, or any part), or a
  // directory holding exactly one model's .gguf file(s).
  static Result<std::unique_ptr<GgufModel>> open(const std::filesystem::path& path);

  const ModelConfig& config() const { return config_; }
  // config.json text the metadata corresponds to (canonical, for the model id).
  const std::string& config_json() const { return config_json_; }
  // The tokenizer from the metadata; nullopt when the file has none.
  const std::optional<TokenizerTexts>& tokenizer() const { return tokenizer_; }

  // kKeyManifestIdentity's value; nullopt when the file has no such key.
  const std::optional<Digest>& manifest_identity() const { return manifest_identity_; }

  const std::vector<std::filesystem::path>& files() const { return paths_; }
  uint64_t file_bytes() const;

  // open() guaranteed every required tensor exists.
  const TensorSlice& tensor(TensorRole role, int64_t layer = 0, int64_t expert = 0) const;
  bool has(TensorRole role, int64_t layer = 0) const;
  // The slice's bytes inside its mapping (a split kv_b: null; its parts'
  // bytes are data(part)).
  const uint8_t* data(const TensorSlice& slice) const;
  const uint8_t* data(const TensorSlice::Part& part) const;
  const MappedFile& mapping(uint32_t file_index) const { return maps_[file_index]; }
  // Every file's MappedFile::prefer_huge_pages (before weights are computed
  // in place from the mappings).
  void prefer_huge_pages() const;

 private:
  GgufModel() = default;
  Status open_files(const std::filesystem::path& path);
  Status build_slices();
  // A split kv_b's slice for `layer` (gguf_kv_b.h), its parts checked.
  Result<TensorSlice> split_kv_b_slice(int64_t layer) const;

  std::vector<std::filesystem::path> paths_;
  std::vector<MappedFile> maps_;
  std::vector<File> headers_;
  // GGUF tensor name -> (file index, tensor info index)
  std::map<std::string, std::pair<uint32_t, size_t>, std::less<>> by_name_;
  ModelConfig config_;
  std::string config_json_;
  std::optional<TokenizerTexts> tokenizer_;
  std::optional<Digest> manifest_identity_;
  std::map<std::tuple<int, int64_t, int64_t>, TensorSlice> slices_;  // (role, layer, expert)
};

// The parts of the split set `first` belongs to, in order, or just `first`
// when its name is not `...-NNNNN-of-MMMMM.gguf`. A missing part is an error.
Result<std::vector<std::filesystem::path>> gguf_split_parts(const std::filesystem::path& first);

// The GGUF file(s) a --model path names: the path itself when it is a file,
// else the directory's one model (a single .gguf, or one split set).
// not_found when a directory holds none; invalid_argument when it holds
// several models.
Result<std::vector<std::filesystem::path>> gguf_files_for(const std::filesystem::path& path);

// True when `path` is a .gguf file or a directory holding a .gguf file and
// no config.json (a HuggingFace directory wins).
bool is_gguf_path(const std::filesystem::path& path);

}  // namespace dancemoe::gguf
