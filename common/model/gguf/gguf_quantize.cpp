#include "common/model/gguf/gguf_quantize.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/base/file_util.h"
#include "common/base/sha256.h"
#include "common/model/gguf/gguf_config.h"
#include "common/model/gguf/gguf_model.h"
#include "common/model/gguf/gguf_tensor_names.h"
#include "common/model/gguf/gguf_tokenizer.h"
#include "common/model/gguf/gguf_writer.h"
#include "common/runtime/thread_pool.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe::gguf {
namespace {

using kernels::WeightType;

// One tensor of the output file.
struct Entry {
  TensorRole role;
  int64_t layer;
  bool experts;  // all experts of the layer, merged
  kernels::WeightType type;
  int64_t rows = 0;  // per matrix (1 for vectors)
  int64_t cols = 0;
};

// The tensors in llama.cpp's order: the model's, then each layer's input
// norm, attention, the norm after it, and the feed-forward (a layer's
// experts merged into one tensor per role). Expert matrices stored as MXFP4
// (gpt-oss as published) stay MXFP4, as llama.cpp's converter keeps them.
std::vector<Entry> plan(const Checkpoint& ckpt, Mixture mixture) {
  const ModelConfig& c = ckpt.config();
  std::vector<Entry> out;
  auto add = [&](TensorRole role, int64_t layer) {
    Entry e{role, layer, is_expert_role(role), WeightType::kF32};
    const std::vector<int64_t> shape = c.expected_shape(role);
    e.rows = shape.size() == 2 ? shape[0] : 1;
    e.cols = shape.back();
    e.type = recipe_type(mixture, c, role, layer, e.cols);
    if (is_expert_matrix_role(role) && ckpt.tensor(role, layer, 0).type == WeightType::kMXFP4) {
      e.type = WeightType::kMXFP4;
    }
    out.push_back(e);
  };
  std::vector<RequiredTensor> layer_tensors;
  auto flush = [&]() {
    // The post-attention norm goes before the feed-forward.
    bool post_norm_pending = false;
    for (const RequiredTensor& t : layer_tensors) {
      if (t.role == TensorRole::kPostAttentionNorm) {
        post_norm_pending = true;
        continue;
      }
      const bool ffn = t.role == TensorRole::kRouter || t.role == TensorRole::kDenseGate;
      if (ffn && post_norm_pending) {
        add(TensorRole::kPostAttentionNorm, t.layer);
        post_norm_pending = false;
      }
      add(t.role, t.layer);
    }
    layer_tensors.clear();
  };
  int64_t current = -1;
  for (const RequiredTensor& t : required_tensors(c)) {
    if (t.expert != 0) continue;  // merged with expert 0's
    const bool global = t.role == TensorRole::kEmbed || t.role == TensorRole::kFinalNorm ||
                        t.role == TensorRole::kLmHead;
    if (global) {
      add(t.role, 0);
      continue;
    }
    if (t.layer != current) flush();
    current = t.layer;
    layer_tensors.push_back(t);
  }
  flush();
  return out;
}

// The tensor's values as f32, row-major [rows, cols] (any stored format: a
// GGUF file can be re-quantized too).
Status read_f32(const Checkpoint& ckpt, const TensorLocation& loc, std::vector<uint8_t>* staging,
                float* out) {
  staging->resize(loc.n_bytes);
  DMOE_RETURN_IF_ERROR(ckpt.read_tensor(loc, staging->data()));
  int64_t n = 1;
  for (int64_t d : loc.shape) n *= d;
  kernels::dequantize_values(loc.type, staging->data(), n, out);
  return Status::ok();
}

class Converter {
 public:
  Converter(const Checkpoint& ckpt, ThreadPool& pool) : ckpt_(ckpt), pool_(pool) {}

  // The bytes of one output tensor.
  Status fill(const Entry& e, std::vector<uint8_t>* bytes) {
    const ModelConfig& c = ckpt_.config();
    source_bytes_ = 0;
    const int64_t n_mats = e.experts ? c.n_experts : 1;
    const int64_t row_bytes = kernels::weight_row_bytes(e.type, e.cols);
    bytes->resize(static_cast<size_t>(n_mats * e.rows * row_bytes));
    values_.resize(static_cast<size_t>(e.rows * e.cols));
    for (int64_t m = 0; m < n_mats; ++m) {
      const TensorLocation& loc = ckpt_.tensor(e.role, e.layer, m);
      source_bytes_ += loc.n_bytes;
      uint8_t* dst = bytes->data() + m * e.rows * row_bytes;
      const bool reorder =
          gguf_interleaves_qk(c) && (e.role == TensorRole::kQ || e.role == TensorRole::kK);
      if (loc.type == e.type && !reorder &&
          loc.n_bytes == static_cast<uint64_t>(e.rows * row_bytes)) {
        // Already in the output format: the bytes as they are (lossless).
        DMOE_RETURN_IF_ERROR(ckpt_.read_tensor(loc, dst));
        continue;
      }
      DMOE_RETURN_IF_ERROR(read_f32(ckpt_, loc, &staging_, values_.data()));
      if (reorder) interleave_rows(c.head_dim, e.rows, e.cols);
      // Rows in chunks across the pool; each chunk writes its own rows.
      const int64_t n_chunks = std::min<int64_t>(e.rows, 4 * pool_.size());
      pool_.parallel_for(n_chunks, [&](int64_t chunk, int) {
        const int64_t r0 = e.rows * chunk / n_chunks;
        const int64_t r1 = e.rows * (chunk + 1) / n_chunks;
        kernels::quantize_rows(e.type, values_.data() + r0 * e.cols, r1 - r0, e.cols,
                               dst + r0 * row_bytes);
      });
    }
    return Status::ok();
  }
  // Checkpoint bytes the last fill() read.
  uint64_t source_bytes() const { return source_bytes_; }

 private:
  // llama.cpp's q/k layout: row (head, half j, i) moves to (head, i, j).
  void interleave_rows(int64_t head_dim, int64_t rows, int64_t cols) {
    reordered_.resize(values_.size());
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(values_.data() + r * cols, cols,
                  reordered_.data() + llama_qk_row(r, head_dim) * cols);
    }
    values_.swap(reordered_);
  }

  const Checkpoint& ckpt_;
  ThreadPool& pool_;
  std::vector<uint8_t> staging_;
  std::vector<float> values_;
  std::vector<float> reordered_;
  uint64_t source_bytes_ = 0;
};

Status add_tokenizer(const Checkpoint& ckpt, GgufWriter* w) {
  const std::optional<std::filesystem::path> path = ckpt.tokenizer_path();
  if (!path) return Status::ok();
  DMOE_ASSIGN_OR_RETURN(std::string json, read_file(*path));
  std::string config;
  const std::filesystem::path config_path = path->parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    DMOE_ASSIGN_OR_RETURN(config, read_file(config_path));
  }
  return tokenizer_to_gguf(json, config, path->string(), ckpt.config().vocab_size, w);
}

}  // namespace

Result<QuantizeSummary> quantize_to_gguf(const Checkpoint& ckpt, const std::filesystem::path& out,
                                         const QuantizeOptions& options) {
  const ModelConfig& c = ckpt.config();
  DMOE_RETURN_IF_ERROR(gguf_supports(c));
  const std::vector<Entry> entries = plan(ckpt, options.mixture);
  GgufWriter w;
  w.set_string("general.architecture", std::string(gguf_architecture(c)));
  w.set_string("general.name", ckpt.dir().filename().string());
  w.set_u32("general.file_type", mixture_file_type(options.mixture));
  // The source's manifest, by identity: the file keeps the model id.
  if (const std::optional<Digest> identity = ckpt.manifest_identity()) {
    w.set_string(kKeyManifestIdentity, to_hex(*identity));
  }
  bool any_quantized = false;
  QuantizeSummary summary;
  for (const Entry& e : entries) {
    std::vector<int64_t> dims = {e.cols};
    if (e.rows > 1 || !is_vector_role(e.role)) dims.push_back(e.rows);
    if (e.experts) dims.push_back(c.n_experts);
    w.add_tensor(gguf_tensor_name(c, e.role, e.layer), dims, ggml_type_id(e.type));
    any_quantized = any_quantized || kernels::is_block_format(e.type);
    ++summary.n_by_type[static_cast<int>(e.type)];
  }
  if (any_quantized) w.set_u32("general.quantization_version", 2);
  DMOE_RETURN_IF_ERROR(add_tokenizer(ckpt, &w));
  config_to_gguf(c, &w);

  ThreadPool pool(std::max(1, options.n_threads));
  Converter converter(ckpt, pool);
  const uint64_t total = ckpt.total_bytes();
  uint64_t done = 0;
  const Status written = w.write(out, [&](size_t i, std::vector<uint8_t>* bytes) {
    DMOE_RETURN_IF_ERROR(converter.fill(entries[i], bytes));
    done += converter.source_bytes();
    if (options.progress) options.progress(std::min(done, total), total);
    return Status::ok();
  });
  DMOE_RETURN_IF_ERROR(written);
  summary.file_bytes = std::filesystem::file_size(out);
  summary.source_bytes = ckpt.total_bytes();
  summary.n_tensors = static_cast<int64_t>(entries.size());
  return summary;
}

}  // namespace dancemoe::gguf
