// Checkpoint: a model's weights opened for reading -- the one abstraction
// over the two on-disk formats:
//   - a HuggingFace-layout directory: open() reads config.json
//     (+ generation_config.json) and the safetensors headers of
//     model.safetensors or of every shard listed in
//     model.safetensors.index.json; tensor bytes are read on demand with
//     read_tensor() (pread);
//   - a GGUF file, a directory holding one, or a split set
//     (gguf/gguf_model.h): memory-mapped; the metadata gives the config and
//     the tokenizer; every tensor is also reachable in place
//     (TensorLocation::mapped), so weights in a format the kernels compute
//     with need no copy;
//   - a split checkpoint (split/split_index.h: `dancemoe model split` or
//     `headers`): the dense part in dense.bin (absent in a header-only
//     copy) and the experts this node has on disk, one file each; the index
//     gives every tensor's type and shape, so sizes and the model id are
//     known without the weights.
// Either way every tensor the architecture needs is checked (present, its
// shape what the config implies) before any tensor data is read, and
// tensors are named by their HuggingFace names (config().tensor_name). The
// Checkpoint owns its file descriptors / mappings; read_tensor is safe from
// several threads at once.
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
#include "common/model/gguf/gguf_kv_b.h"
#include "common/model/model_config.h"
#include "common/model/split/expert_files.h"
#include "common/tensor/dtype.h"
#include "common/tokenizer/tokenizer.h"
#include "kernels/kernels.h"

namespace dancemoe {

// Called as weight bytes are read: (bytes done, bytes total).
using LoadProgress = std::function<void(uint64_t done, uint64_t total)>;

namespace gguf {
class GgufModel;
}
struct SplitIndex;

// A tensor that is not stored as one contiguous run but assembled from one
// by read_tensor() (gpt-oss's published experts, common/model/stacked_experts.h):
// row r (r < shape[0]; a vector has one element per row) is row_bytes bytes
// at file_offset + r * row_stride. With published_mxfp4 those bytes are the
// row's MXFP4 codes in gpt-oss's layout and its E8M0 scales (row_bytes / 16
// of them) are at scales_offset + r * scales_stride of the same file; the
// tensor is then kMXFP4 blocks (common/model/published_mxfp4.h).
struct TensorView {
  uint64_t row_bytes = 0;
  uint64_t row_stride = 0;
  bool published_mxfp4 = false;
  uint64_t scales_offset = 0;
  uint64_t scales_stride = 0;
};

struct TensorLocation {
  std::string name;
  kernels::WeightType type = kernels::WeightType::kF32;  // element or block format
  std::vector<int64_t> shape;                            // HF order: [rows, cols] or [n]
  uint32_t file_index = 0;
  uint64_t file_offset = 0;  // absolute offset in that file
  uint64_t n_bytes = 0;
  // GGUF: the bytes inside the file's memory mapping (valid while the
  // Checkpoint lives); null for safetensors files.
  const uint8_t* mapped = nullptr;
  // GGUF "llama" q/k: rows stored in llama.cpp's interleaved order.
  // read_tensor() returns HF order; `mapped` does not.
  bool interleaved_qk = false;
  // GGUF DeepSeek kv_b stored as attn_k_b + attn_v_b (gguf_kv_b.h):
  // read_tensor() assembles it; `mapped` is null.
  std::optional<gguf::SplitKvB> kv_b_split;
  // Assembled from stored rows (see TensorView); n_bytes is the result's size.
  std::optional<TensorView> view;
  // A safetensors U8 tensor: raw bytes only views read, never a weight
  // (`type` means nothing for it).
  bool raw_u8 = false;

  // A split checkpoint's expert tensor: its bytes are at file_offset of
  // that expert's own file (split/expert_files.h); layer -1 otherwise.
  ExpertRef in_expert_file{-1, -1};

  // The bytes can be used where they are, as they are.
  bool usable_in_place() const { return mapped != nullptr && !interleaved_qk && !kv_b_split; }
};

class Checkpoint {
 public:
  // `model`: a HuggingFace directory, a .gguf file, or a directory holding
  // one GGUF model (gguf::is_gguf_path decides).
  static Result<std::unique_ptr<Checkpoint>> open(const std::filesystem::path& model);
  ~Checkpoint();

  // The path open() was given (a directory or a .gguf file).
  const std::filesystem::path& dir() const { return dir_; }
  bool is_gguf() const { return gguf_ != nullptr; }
  const ModelConfig& config() const { return config_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

  // nullptr when the checkpoint has no tensor of that name.
  const TensorLocation* find(std::string_view name) const;
  // A tensor the architecture requires; open() guaranteed it exists.
  const TensorLocation& tensor(TensorRole role, int64_t layer = 0, int64_t expert = 0) const;
  bool has(TensorRole role, int64_t layer = 0, int64_t expert = 0) const;

  // Reads a tensor's bytes into dst (n_bytes of them), rows in HF order.
  // A split checkpoint's missing expert file is not_found naming the file;
  // a header-only copy's dense tensor is failed_precondition.
  Status read_tensor(const TensorLocation& tensor, void* dst) const;
  // A tensor copied out of a GGUF mapping is not read there again: its
  // pages (and their neighbourhood, MappedFile::drop_pages_around) leave
  // this process's RSS. Nothing for a tensor that is not mapped.
  void drop_mapped_pages(const TensorLocation& tensor) const;

  // A split checkpoint (split/split_index.h).
  bool is_split() const { return split_ != nullptr; }
  // False for a header-only copy (`dancemoe model headers`): no weights at all.
  bool has_dense_weights() const;
  // The expert's weights are on this machine's disk (always, but for a
  // split checkpoint: its file is there with the right size).
  bool has_expert_weights(ExpertRef key) const;
  // Where the expert's weights are read from, for messages.
  std::string expert_location(ExpertRef key) const;
  // A split checkpoint's expert files (the node's local expert store);
  // nullptr otherwise.
  const ExpertFiles* expert_files() const { return expert_files_.get(); }
  // The digests experts are checked against when they become resident: the
  // manifest's, or a split checkpoint's index's (the bytes as stored, GGUF
  // blocks included); nullptr when there are none (loaded unverified).
  const ExpertManifest* expert_digests() const;

  // Stable identity of the model, whatever its file format or precision:
  // SHA-256 over the architecture and shapes (the ModelConfig fields that
  // define the computation), the sorted tensor index (HF names and shapes,
  // not dtypes) and the expert manifest's identity when there is one
  // (expert_manifest.h; a GGUF written by `dancemoe quantize` carries its
  // source's, see manifest_identity()); 32 hex characters. A GGUF
  // quantization of a checkpoint has the checkpoint's id: precision is
  // reported separately (expert_type()).
  const std::string& model_id() const { return model_id_; }
  // The per-expert digests (expert_manifest.h) of the experts as stored;
  // nullptr without a manifest. A GGUF file has none: its experts are
  // loaded unverified.
  const ExpertManifest* manifest() const { return manifest_ ? &*manifest_ : nullptr; }
  // The identity of the manifest of the weights this checkpoint was made
  // from: its own manifest's, or the one a GGUF's metadata names
  // (gguf::kKeyManifestIdentity); nullopt when neither.
  std::optional<Digest> manifest_identity() const;
  // The format of the experts' weights as stored (the first expert's gate;
  // a mixture may store down projections differently).
  kernels::WeightType expert_type() const;

  // Exact bytes of one expert's weights (gate + up + down), and of the dense part.
  uint64_t expert_bytes(int64_t layer, int64_t expert) const;
  uint64_t dense_bytes() const;
  uint64_t total_bytes() const;
  // The dense weight bytes one forward step over n_tokens reads: every dense
  // matrix once, plus the n_tokens' embedding rows (the whole embedding is
  // read only as a tied LM head). The roofline benchmarks' denominator.
  uint64_t dense_bytes_read(int64_t n_tokens) const;

  // A GGUF's mappings ask for 2 MiB pages (MappedFile::prefer_huge_pages),
  // for weights computed in place; other formats: nothing to do.
  void prefer_huge_pages() const;

  // tokenizer.json beside the weights, when present (HuggingFace layout).
  std::optional<std::filesystem::path> tokenizer_path() const;
  // The model's tokenizer: tokenizer.json, or the GGUF metadata's;
  // not_found when there is none.
  Result<std::unique_ptr<tokenizer::Tokenizer>> load_tokenizer() const;
  // Where the tokenizer comes from, for messages ("" when none).
  std::string tokenizer_source() const;

 private:
  Checkpoint();
  Status open_gguf(const std::filesystem::path& path);
  Status open_split(const std::filesystem::path& dir);
  // The file a tensor lives in, for messages.
  std::string location_name(const TensorLocation& tensor) const;
  Status index_file(uint32_t file_index, const std::filesystem::path& path,
                    const std::unordered_map<std::string, std::string>* expected_names);
  Status check_required_tensors() const;
  Status read_view(const TensorLocation& tensor, uint8_t* dst) const;
  Status pread_all(const TensorLocation& tensor, uint64_t offset, uint64_t n_bytes,
                   uint8_t* dst) const;
  void compute_model_id();

  std::filesystem::path dir_;
  ModelConfig config_;
  std::vector<std::filesystem::path> files_;
  std::vector<UniqueFd> fds_;
  std::unordered_map<std::string, TensorLocation> tensors_;
  std::optional<ExpertManifest> manifest_;
  std::string model_id_;
  std::unique_ptr<gguf::GgufModel> gguf_;
  std::unique_ptr<SplitIndex> split_;
  std::optional<ExpertManifest> split_digests_;
  std::unique_ptr<ExpertFiles> expert_files_;
};

}  // namespace dancemoe
