#include "common/model/gguf/gguf_model.h"

#include <algorithm>
#include <regex>

#include "common/base/shape_text.h"
#include "common/model/gguf/gguf_config.h"
#include "common/model/gguf/gguf_kv_b.h"
#include "common/model/gguf/gguf_tensor_names.h"
#include "kernels/quant_format.h"

namespace dancemoe::gguf {
namespace {

const std::regex& split_pattern() {
  static const std::regex kPattern(R"(^(.*)-([0-9]{5})-of-([0-9]{5})\.gguf$)");
  return kPattern;
}

// Every (role, layer) the architecture needs: required_tensors() with the
// experts of a layer as one entry (expert 0), as GGUF merges them.
std::vector<std::pair<TensorRole, int64_t>> required(const ModelConfig& c) {
  std::vector<std::pair<TensorRole, int64_t>> out;
  for (const RequiredTensor& t : required_tensors(c)) {
    if (t.expert == 0) out.push_back({t.role, t.layer});
  }
  return out;
}

// GGUF dims agree when equal but for trailing 1s (a [1, n] matrix may be
// stored as the vector [n], as llama.cpp's converter writes
// ffn_gate_inp_shexp).
bool same_dims(std::vector<int64_t> a, std::vector<int64_t> b) {
  while (a.size() > 1 && a.back() == 1) a.pop_back();
  while (b.size() > 1 && b.back() == 1) b.pop_back();
  return a == b;
}

Result<int64_t> split_key(const File& f, const std::string& file, const char* key) {
  const Value* v = f.find(key);
  if (v == nullptr)
    return not_found(file + ": metadata '" + key + "' is missing (a split GGUF part)");
  if (!v->is_integer() || v->integer_overflows || v->integer < 0) {
    return invalid_argument(file + ": metadata '" + key + "': expected a non-negative integer");
  }
  return v->integer;
}

// The runtime's type of a tensor, or an error naming it.
Result<kernels::WeightType> computed_type(const std::string& file, const std::string& name,
                                          const TensorInfo& info) {
  const std::optional<kernels::WeightType> type = runtime_type(info.type_id);
  if (!type) {
    const TensorTypeInfo* t = tensor_type_info(info.type_id);
    return invalid_argument(file + ": tensor '" + name + "' has type " +
                            std::string(t ? t->name : "?") +
                            ", which the runtime does not compute with (supported: f32, f16, "
                            "bf16, q8_0, q4_0, q4_K, q5_K, q6_K, mxfp4)");
  }
  return *type;
}

}  // namespace

Result<std::vector<std::filesystem::path>> gguf_split_parts(const std::filesystem::path& first) {
  std::smatch m;
  const std::string name = first.filename().string();
  if (!std::regex_match(name, m, split_pattern())) return std::vector<std::filesystem::path>{first};
  const int count = std::stoi(m[3].str());
  if (count < 1) return invalid_argument(first.string() + ": a split set of 0 parts");
  std::vector<std::filesystem::path> parts;
  for (int i = 1; i <= count; ++i) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", i, count);
    const std::filesystem::path part = first.parent_path() / (m[1].str() + suffix);
    if (!std::filesystem::is_regular_file(part)) {
      return not_found(part.string() + ": part " + std::to_string(i) + " of the split GGUF " +
                       first.string() + " is missing");
    }
    parts.push_back(part);
  }
  return parts;
}

Result<std::vector<std::filesystem::path>> gguf_files_for(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return gguf_split_parts(path);
  if (!std::filesystem::is_directory(path, ec)) {
    return not_found(path.string() + ": no such file or directory");
  }
  // One model per directory: a single file, or the parts of one split set.
  std::map<std::string, std::filesystem::path> models;  // model name -> its first file
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".gguf") continue;
    const std::string name = entry.path().filename().string();
    std::smatch m;
    const std::string key = std::regex_match(name, m, split_pattern()) ? m[1].str() : name;
    auto it = models.find(key);
    if (it == models.end() || entry.path() < it->second) models[key] = entry.path();
  }
  if (models.empty()) return not_found(path.string() + ": no .gguf file in this directory");
  if (models.size() > 1) {
    std::string names;
    for (const auto& [name, file] : models)
      names += (names.empty() ? "" : ", ") + file.filename().string();
    return invalid_argument(path.string() + ": holds several GGUF models (" + names +
                            "); pass the file to use");
  }
  return gguf_split_parts(models.begin()->second);
}

void GgufModel::prefer_huge_pages() const {
  for (const MappedFile& map : maps_) map.prefer_huge_pages();
}

bool is_gguf_path(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path.extension() == ".gguf";
  if (!std::filesystem::is_directory(path, ec) || std::filesystem::exists(path / "config.json")) {
    return false;
  }
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".gguf") return true;
  }
  return false;
}

Status GgufModel::open_files(const std::filesystem::path& path) {
  DMOE_ASSIGN_OR_RETURN(paths_, gguf_files_for(path));
  for (const std::filesystem::path& p : paths_) {
    DMOE_ASSIGN_OR_RETURN(MappedFile map, MappedFile::open(p));
    DMOE_ASSIGN_OR_RETURN(File header, parse_gguf(map.bytes(), p.string()));
    maps_.push_back(std::move(map));
    headers_.push_back(std::move(header));
  }
  if (paths_.size() > 1) {
    int64_t n_tensors = 0;
    for (size_t i = 0; i < paths_.size(); ++i) {
      const std::string name = paths_[i].string();
      DMOE_ASSIGN_OR_RETURN(int64_t no, split_key(headers_[i], name, "split.no"));
      DMOE_ASSIGN_OR_RETURN(int64_t count, split_key(headers_[i], name, "split.count"));
      if (no != static_cast<int64_t>(i) || count != static_cast<int64_t>(paths_.size())) {
        return invalid_argument(name + ": metadata 'split.no' / 'split.count' say part " +
                                std::to_string(no + 1) + " of " + std::to_string(count) +
                                ", but the file name says part " + std::to_string(i + 1) + " of " +
                                std::to_string(paths_.size()));
      }
      n_tensors += static_cast<int64_t>(headers_[i].tensors.size());
    }
    DMOE_ASSIGN_OR_RETURN(int64_t expected,
                          split_key(headers_[0], paths_[0].string(), "split.tensors.count"));
    if (expected != n_tensors) {
      return invalid_argument(paths_[0].string() + ": metadata 'split.tensors.count' is " +
                              std::to_string(expected) + ", but the parts hold " +
                              std::to_string(n_tensors) + " tensors");
    }
  }
  for (size_t f = 0; f < headers_.size(); ++f) {
    for (size_t t = 0; t < headers_[f].tensors.size(); ++t) {
      const std::string& name = headers_[f].tensors[t].name;
      if (!by_name_.emplace(name, std::make_pair(static_cast<uint32_t>(f), t)).second) {
        return invalid_argument(paths_[f].string() + ": tensor '" + name +
                                "' is also in another part of the split set");
      }
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<GgufModel>> GgufModel::open(const std::filesystem::path& path) {
  std::unique_ptr<GgufModel> model(new GgufModel());
  DMOE_RETURN_IF_ERROR(model->open_files(path));
  // The metadata of the first part, with every part's tensor infos.
  File merged;
  merged.metadata = model->headers_[0].metadata;
  for (const File& h : model->headers_) {
    merged.tensors.insert(merged.tensors.end(), h.tensors.begin(), h.tensors.end());
  }
  const std::string first = model->paths_[0].string();
  DMOE_ASSIGN_OR_RETURN(model->config_json_, config_json_from_gguf(merged, first));
  DMOE_ASSIGN_OR_RETURN(model->config_, parse_model_config(model->config_json_, first));
  Result<TokenizerTexts> tok = tokenizer_from_gguf(merged, first);
  if (tok.is_ok()) {
    model->tokenizer_ = std::move(tok).value();
  } else if (tok.status().code() != StatusCode::kNotFound ||
             merged.find("tokenizer.ggml.model") != nullptr) {
    return tok.status();
  }
  if (const Value* v = merged.find(kKeyManifestIdentity)) {
    std::optional<Digest> d;
    if (v->type == ValueType::kString) d = digest_from_hex(v->text);
    if (!d) {
      return invalid_argument(first + ": metadata '" + kKeyManifestIdentity +
                              "': expected a string of 64 lower-case hex characters");
    }
    model->manifest_identity_ = d;
  }
  DMOE_RETURN_IF_ERROR(model->build_slices());
  return model;
}

Status GgufModel::build_slices() {
  const ModelConfig& c = config_;
  for (const auto& [role, layer] : required(c)) {
    const bool experts = is_expert_role(role);
    const std::vector<int64_t> shape = c.expected_shape(role);
    // GGUF dims run fastest-first: [cols, rows] (+ [n_experts]); vectors [n].
    std::vector<int64_t> dims(shape.rbegin(), shape.rend());
    const std::string merged_name = gguf_tensor_name(c, role, layer);
    std::string name = merged_name;
    auto it = by_name_.find(name);
    if (role == TensorRole::kKvB && it == by_name_.end()) {
      DMOE_ASSIGN_OR_RETURN(TensorSlice split, split_kv_b_slice(layer));
      slices_[{static_cast<int>(role), layer, 0}] = std::move(split);
      continue;
    }
    // Only expert matrices had the older one-tensor-per-expert names.
    const bool merged = it != by_name_.end() || !is_expert_matrix_role(role);
    if (experts && merged) dims.push_back(c.n_experts);
    const int64_t n_slabs = experts ? c.n_experts : 1;
    for (int64_t e = 0; e < n_slabs; ++e) {
      if (!merged) {  // the older one-tensor-per-expert naming
        name = gguf_single_expert_name(role, layer, e);
        it = by_name_.find(name);
      }
      if (it == by_name_.end()) {
        return not_found(paths_[0].string() + ": tensor '" + merged_name +
                         "' required by the metadata (" + c.hf_architecture + ") is missing");
      }
      const auto [file_index, info_index] = it->second;
      const File& header = headers_[file_index];
      const TensorInfo& info = header.tensors[info_index];
      const std::string file = paths_[file_index].string();
      if (!same_dims(info.dims, dims)) {
        return invalid_argument(file + ": tensor '" + name + "' has dims " + shape_text(info.dims) +
                                ", but the metadata implies " + shape_text(dims));
      }
      DMOE_ASSIGN_OR_RETURN(const kernels::WeightType type, computed_type(file, name, info));
      const bool slab = experts && merged;
      for (int64_t x = 0; x < (slab ? c.n_experts : 1); ++x) {
        TensorSlice s;
        s.name = slab ? name + "[expert " + std::to_string(x) + "]" : name;
        s.type = type;
        s.shape = shape;
        s.file_index = file_index;
        s.n_bytes = slab ? info.n_bytes / static_cast<uint64_t>(c.n_experts) : info.n_bytes;
        s.file_offset = header.data_offset + info.offset + static_cast<uint64_t>(x) * s.n_bytes;
        s.interleaved_qk =
            gguf_interleaves_qk(c) && (role == TensorRole::kQ || role == TensorRole::kK ||
                                       role == TensorRole::kQBias || role == TensorRole::kKBias);
        slices_[{static_cast<int>(role), layer, slab ? x : e}] = std::move(s);
      }
      if (slab) break;
    }
  }
  return Status::ok();
}

Result<TensorSlice> GgufModel::split_kv_b_slice(int64_t layer) const {
  const ModelConfig& c = config_;
  const auto [k_name, v_name] = gguf_split_kv_b_names(layer);
  // GGUF dims, fastest first: k_b [nope, rank, n_heads], v_b [rank, v_dim, n_heads].
  const std::vector<int64_t> k_dims = {c.qk_nope_head_dim, c.kv_lora_rank, c.n_heads};
  const std::vector<int64_t> v_dims = {c.kv_lora_rank, c.v_head_dim, c.n_heads};
  TensorSlice::Part parts[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& name = i == 0 ? k_name : v_name;
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      return not_found(
          paths_[0].string() + ": tensor '" + gguf_tensor_name(c, TensorRole::kKvB, layer) +
          "' required by the metadata (" + c.hf_architecture + ") is missing, and so is '" + name +
          "' of its split form (attn_k_b + attn_v_b)");
    }
    const auto [file_index, info_index] = it->second;
    const File& header = headers_[file_index];
    const TensorInfo& info = header.tensors[info_index];
    const std::string file = paths_[file_index].string();
    const std::vector<int64_t>& dims = i == 0 ? k_dims : v_dims;
    if (info.dims != dims) {
      return invalid_argument(file + ": tensor '" + name + "' has dims " + shape_text(info.dims) +
                              ", but the metadata implies " + shape_text(dims));
    }
    DMOE_ASSIGN_OR_RETURN(const kernels::WeightType type, computed_type(file, name, info));
    parts[i] = {name, type, file_index, header.data_offset + info.offset};
  }
  TensorSlice s;
  s.name = k_name + " + " + v_name;
  s.type = assembled_kv_b_type(parts[0].type, parts[1].type);
  s.shape = c.expected_shape(TensorRole::kKvB);
  s.file_index = parts[0].file_index;
  s.n_bytes = static_cast<uint64_t>(s.shape[0]) *
              static_cast<uint64_t>(kernels::weight_row_bytes(s.type, s.shape[1]));
  s.kv_b_split = std::make_pair(parts[0], parts[1]);
  return s;
}

uint64_t GgufModel::file_bytes() const {
  uint64_t n = 0;
  for (const MappedFile& m : maps_) n += m.size();
  return n;
}

const TensorSlice& GgufModel::tensor(TensorRole role, int64_t layer, int64_t expert) const {
  return slices_.at({static_cast<int>(role), layer, expert});
}

bool GgufModel::has(TensorRole role, int64_t layer) const {
  return slices_.count({static_cast<int>(role), layer, 0}) != 0;
}

const uint8_t* GgufModel::data(const TensorSlice& slice) const {
  if (slice.kv_b_split) return nullptr;
  return maps_[slice.file_index].data() + slice.file_offset;
}

const uint8_t* GgufModel::data(const TensorSlice::Part& part) const {
  return maps_[part.file_index].data() + part.file_offset;
}

}  // namespace dancemoe::gguf
