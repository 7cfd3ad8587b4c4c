#include "common/model/split/split_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/base/file_util.h"
#include "common/base/unique_fd.h"
#include "common/model/gguf/gguf_model.h"
#include "common/model/split/expert_files.h"
#include "common/model/split/split_index.h"

namespace dancemoe {
namespace {

namespace fs = std::filesystem;

constexpr TensorRole kExpertRoles[3] = {TensorRole::kExpertGate, TensorRole::kExpertUp,
                                        TensorRole::kExpertDown};

SplitTensor split_tensor(const TensorLocation& t) {
  SplitTensor s;
  s.name = t.name;
  s.type = t.type;
  s.shape = t.shape;
  s.n_bytes = t.n_bytes;
  return s;
}

// `out` may be created: it must not exist, be empty, or (force) hold a split.
Status prepare_output(const fs::path& out, bool force) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) {
      return invalid_argument(out.string() + ": exists and is not a directory");
    }
    if (!fs::is_empty(out, ec) && !(force && SplitIndex::present(out))) {
      return invalid_argument(out.string() +
                              ": not empty (choose a new directory, or --force to replace a "
                              "split checkpoint there)");
    }
  }
  fs::create_directories(out / SplitIndex::kExpertsDir, ec);
  if (ec) return unavailable(out.string() + ": cannot create (" + ec.message() + ")");
  return Status::ok();
}

// config.json, tokenizer files, generation config and manifest.
Status write_side_files(const Checkpoint& source, const fs::path& out) {
  if (source.is_gguf()) {
    DMOE_ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufModel> model,
                          gguf::GgufModel::open(source.dir()));
    DMOE_RETURN_IF_ERROR(write_file(out / "config.json", model->config_json() + "\n"));
    if (model->tokenizer()) {
      DMOE_RETURN_IF_ERROR(write_file(out / "tokenizer.json", model->tokenizer()->tokenizer_json));
      if (!model->tokenizer()->tokenizer_config_json.empty()) {
        DMOE_RETURN_IF_ERROR(
            write_file(out / "tokenizer_config.json", model->tokenizer()->tokenizer_config_json));
      }
    }
    return Status::ok();
  }
  for (const char* name : {"config.json", "generation_config.json", "tokenizer.json",
                           "tokenizer_config.json", ExpertManifest::kFileName}) {
    std::error_code ec;
    if (!fs::exists(source.dir() / name, ec)) continue;
    fs::copy_file(source.dir() / name, out / name, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return unavailable((out / name).string() + ": cannot copy from " +
                         (source.dir() / name).string() + " (" + ec.message() + ")");
    }
  }
  return Status::ok();
}

class DenseFile {
 public:
  Status open(const fs::path& path) {
    path_ = path;
    fd_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_.valid()) return unavailable(path.string() + ": cannot create (" + why() + ")");
    return Status::ok();
  }
  // Appends at the next 64-aligned offset; returns that offset.
  Result<uint64_t> append(const std::vector<uint8_t>& bytes) {
    const uint64_t offset =
        (size_ + SplitIndex::kAlign - 1) / SplitIndex::kAlign * SplitIndex::kAlign;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t put = ::pwrite(fd_.get(), bytes.data() + done, bytes.size() - done,
                                   static_cast<off_t>(offset + done));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) return unavailable(path_.string() + ": cannot write (" + why() + ")");
      done += static_cast<size_t>(put);
    }
    size_ = offset + bytes.size();
    return offset;
  }
  Status close() {
    if (::fsync(fd_.get()) != 0)
      return unavailable(path_.string() + ": cannot sync (" + why() + ")");
    fd_.reset();
    return Status::ok();
  }
  uint64_t size() const { return size_; }

 private:
  static std::string why() { return std::strerror(errno); }
  fs::path path_;
  UniqueFd fd_;
  uint64_t size_ = 0;
};

}  // namespace

Result<SplitSummary> write_split(const Checkpoint& source, const fs::path& out,
                                 const SplitOptions& options) {
  const ModelConfig& config = source.config();
  if (!source.has_dense_weights() && !options.headers_only) {
    return failed_precondition(source.dir().string() +
                               " is a header-only copy: it has no weights to split");
  }
  DMOE_RETURN_IF_ERROR(prepare_output(out, options.force));
  DMOE_RETURN_IF_ERROR(write_side_files(source, out));

  SplitIndex index;
  index.model_id = source.model_id();
  if (source.manifest() == nullptr) index.manifest_identity = source.manifest_identity();
  index.has_dense = !options.headers_only;
  const ExpertManifest* known = source.expert_digests();

  uint64_t total = 0;
  for (const RequiredTensor& r : required_tensors(config)) {
    const bool expert = is_expert_role(r.role);
    if (expert ? !(options.headers_only && known) : !options.headers_only) {
      total += source.tensor(r.role, r.layer, r.expert).n_bytes;
    }
  }
  uint64_t done = 0;
  auto advance = [&](uint64_t n) {
    done += n;
    if (options.progress) options.progress(done, total);
  };

  SplitSummary summary;
  summary.model_id = source.model_id();
  DenseFile dense;
  if (!options.headers_only) DMOE_RETURN_IF_ERROR(dense.open(out / SplitIndex::kDenseFile));
  std::vector<uint8_t> bytes;
  uint64_t header_offset = 0;  // a header-only copy lays the tensors out as split would
  for (const RequiredTensor& r : required_tensors(config)) {
    if (is_expert_role(r.role)) continue;
    const TensorLocation& t = source.tensor(r.role, r.layer, r.expert);
    SplitTensor s = split_tensor(t);
    if (options.headers_only) {
      s.offset = header_offset;
      header_offset = (header_offset + t.n_bytes + SplitIndex::kAlign - 1) / SplitIndex::kAlign *
                      SplitIndex::kAlign;
    } else {
      bytes.resize(t.n_bytes);
      DMOE_RETURN_IF_ERROR(source.read_tensor(t, bytes.data()));
      DMOE_ASSIGN_OR_RETURN(s.offset, dense.append(bytes));
      summary.dense_bytes += t.n_bytes;
      advance(t.n_bytes);
    }
    index.dense.push_back(std::move(s));
  }
  if (!options.headers_only) DMOE_RETURN_IF_ERROR(dense.close());

  const ExpertFiles files(out / SplitIndex::kExpertsDir);
  std::vector<uint8_t> parts[3];
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    SplitExpertLayer layer;
    layer.layer = l;
    SplitTensor* views[3] = {&layer.gate, &layer.up, &layer.down};
    uint64_t offset = 0;
    for (int i = 0; i < 3; ++i) {
      *views[i] = split_tensor(source.tensor(kExpertRoles[i], l, 0));
      views[i]->offset = offset;
      offset += views[i]->n_bytes;
    }
    for (int64_t e = 0; e < config.n_experts; ++e) {
      const ExpertRef key{static_cast<int32_t>(l), static_cast<int32_t>(e)};
      const Digest* want = known ? known->find(key) : nullptr;
      const bool on_disk = source.has_expert_weights(key);
      if ((options.headers_only && want) || (!on_disk && want)) {
        layer.digests.push_back(*want);
        if (!on_disk) ++summary.n_experts_absent;
        continue;
      }
      std::vector<uint8_t> expert;
      for (int i = 0; i < 3; ++i) {
        const TensorLocation& t = source.tensor(kExpertRoles[i], l, e);
        parts[i].resize(t.n_bytes);
        DMOE_RETURN_IF_ERROR(source.read_tensor(t, parts[i].data()));
        advance(t.n_bytes);
      }
      const Digest got = expert_digest(parts[0], parts[1], parts[2]);
      if (known) DMOE_RETURN_IF_ERROR(known->check(key, got).with_context(source.dir().string()));
      layer.digests.push_back(got);
      if (options.headers_only) continue;
      for (int i = 0; i < 3; ++i) expert.insert(expert.end(), parts[i].begin(), parts[i].end());
      DMOE_RETURN_IF_ERROR(files.write(key, expert));
      ++summary.n_expert_files;
      summary.expert_bytes += expert.size();
    }
    index.expert_layers.push_back(std::move(layer));
  }
  DMOE_RETURN_IF_ERROR(index.write(out));
  // The copy must open as the same model.
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> reopened, Checkpoint::open(out));
  if (reopened->model_id() != source.model_id()) {
    return internal_error(out.string() + ": the split has model id " + reopened->model_id() +
                          ", its source " + source.model_id());
  }
  return summary;
}

}  // namespace dancemoe
