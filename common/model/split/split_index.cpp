#include "common/model/split/split_index.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/base/file_util.h"
#include "common/base/json_field.h"
#include "common/base/sha256.h"
#include "common/base/shape_text.h"
#include "kernels/quant_format.h"

namespace dancemoe {
namespace {

constexpr const char* kSplitFormat = "dancemoe-split-v1";
constexpr uint64_t kMaxIndexBytes = uint64_t{256} << 20;

using nlohmann::ordered_json;

ordered_json tensor_json(const SplitTensor& t, bool with_name_and_offset) {
  ordered_json j = ordered_json::object();
  if (with_name_and_offset) j["name"] = t.name;
  j["type"] = std::string(kernels::weight_type_name(t.type));
  j["shape"] = t.shape;
  if (with_name_and_offset) j["offset"] = t.offset;
  j["bytes"] = t.n_bytes;
  return j;
}

// One tensor entry: type, shape, bytes consistent with them (and, for the
// dense list, name and offset).
Result<SplitTensor> parse_tensor(const JsonField& f, bool with_name_and_offset) {
  DMOE_RETURN_IF_ERROR(f.expect_object());
  SplitTensor t;
  if (with_name_and_offset) {
    DMOE_ASSIGN_OR_RETURN(t.name, f.required_string("name"));
    DMOE_ASSIGN_OR_RETURN(JsonField offset, f.member("offset"));
    DMOE_ASSIGN_OR_RETURN(t.offset, offset.as_uint());
    if (t.offset % SplitIndex::kAlign != 0) {
      return f.member_error("offset", "a multiple of 64");
    }
  }
  DMOE_ASSIGN_OR_RETURN(const std::string type, f.required_string("type"));
  if (!kernels::parse_weight_type(type, &t.type)) {
    return f.member_error("type", "a weight type (f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K)");
  }
  DMOE_ASSIGN_OR_RETURN(JsonField shape, f.member("shape"));
  DMOE_RETURN_IF_ERROR(shape.expect_array());
  if (shape.json().empty() || shape.json().size() > 2) {
    return f.member_error("shape", "[rows, cols] or [n]");
  }
  for (size_t i = 0; i < shape.json().size(); ++i) {
    DMOE_ASSIGN_OR_RETURN(const int64_t d, shape.element(i).as_int());
    if (d <= 0 || d > (int64_t{1} << 32)) return f.member_error("shape", "positive dimensions");
    t.shape.push_back(d);
  }
  if (t.shape.back() % kernels::weight_block_values(t.type) != 0) {
    return f.member_error("shape", "rows made of whole " + type + " blocks");
  }
  DMOE_ASSIGN_OR_RETURN(JsonField bytes, f.member("bytes"));
  DMOE_ASSIGN_OR_RETURN(t.n_bytes, bytes.as_uint());
  if (t.n_bytes != tensor_bytes(t.type, t.shape)) {
    return f.member_error("bytes", std::to_string(tensor_bytes(t.type, t.shape)) + " (a " + type +
                                       " tensor of shape " + shape_text(t.shape) + ")");
  }
  return t;
}

Result<SplitExpertLayer> parse_layer(const JsonField& f, const ModelConfig& config) {
  DMOE_RETURN_IF_ERROR(f.expect_object());
  SplitExpertLayer layer;
  DMOE_ASSIGN_OR_RETURN(layer.layer, f.int_in("layer", 0, config.n_layers - 1));
  if (!config.layer_is_moe[static_cast<size_t>(layer.layer)]) {
    return f.member_error("layer", "a MoE layer of config.json");
  }
  const std::pair<const char*, SplitTensor*> parts[3] = {
      {"gate", &layer.gate}, {"up", &layer.up}, {"down", &layer.down}};
  const TensorRole roles[3] = {TensorRole::kExpertGate, TensorRole::kExpertUp,
                               TensorRole::kExpertDown};
  uint64_t offset = 0;
  for (int i = 0; i < 3; ++i) {
    DMOE_ASSIGN_OR_RETURN(JsonField part, f.member(parts[i].first));
    DMOE_ASSIGN_OR_RETURN(*parts[i].second, parse_tensor(part, false));
    SplitTensor& t = *parts[i].second;
    if (t.shape != config.expected_shape(roles[i])) {
      return part.error("shape " + shape_text(t.shape) + ", but config.json implies " +
                        shape_text(config.expected_shape(roles[i])));
    }
    t.name = config.tensor_name(roles[i], layer.layer, 0);
    t.offset = offset;
    offset += t.n_bytes;
  }
  DMOE_ASSIGN_OR_RETURN(JsonField digests, f.member("sha256"));
  DMOE_RETURN_IF_ERROR(digests.expect_array());
  if (static_cast<int64_t>(digests.json().size()) != config.n_experts) {
    return f.member_error("sha256", std::to_string(config.n_experts) + " digests, one per expert");
  }
  for (size_t e = 0; e < digests.json().size(); ++e) {
    DMOE_ASSIGN_OR_RETURN(const std::string hex, digests.element(e).as_string());
    const std::optional<Digest> d = digest_from_hex(hex);
    if (!d) return digests.element(e).error("expected 64 lower-case hex digits (SHA-256)");
    layer.digests.push_back(*d);
  }
  return layer;
}

}  // namespace

uint64_t tensor_bytes(kernels::WeightType type, const std::vector<int64_t>& shape) {
  const int64_t cols = shape.back();
  const int64_t rows = shape.size() == 2 ? shape[0] : 1;
  return static_cast<uint64_t>(rows * kernels::weight_row_bytes(type, cols));
}

bool SplitIndex::present(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / kFileName, ec);
}

Result<SplitIndex> SplitIndex::read(const std::filesystem::path& dir, const ModelConfig& config) {
  const std::filesystem::path path = dir / kFileName;
  DMOE_ASSIGN_OR_RETURN(const std::string text, read_file(path, kMaxIndexBytes));
  return parse(text, path.string(), config);
}

Result<SplitIndex> SplitIndex::parse(std::string_view text, const std::string& source,
                                     const ModelConfig& config) {
  DMOE_ASSIGN_OR_RETURN(const nlohmann::json doc, parse_json_document(text, source));
  const JsonField root(doc, source);
  DMOE_RETURN_IF_ERROR(root.expect_object());
  DMOE_ASSIGN_OR_RETURN(const std::string format, root.required_string("format"));
  if (format != kSplitFormat)
    return root.member_error("format", std::string("\"") + kSplitFormat + "\"");
  SplitIndex index;
  DMOE_ASSIGN_OR_RETURN(index.model_id, root.required_string("model_id"));
  DMOE_ASSIGN_OR_RETURN(const std::optional<JsonField> identity,
                        root.optional_member("manifest_identity"));
  if (identity) {
    DMOE_ASSIGN_OR_RETURN(const std::string hex, identity->as_string());
    index.manifest_identity = digest_from_hex(hex);
    if (!index.manifest_identity) {
      return root.member_error("manifest_identity", "64 lower-case hex digits");
    }
  }
  DMOE_ASSIGN_OR_RETURN(const std::optional<JsonField> dense_file,
                        root.optional_member("dense_file"));
  index.has_dense = dense_file.has_value();
  if (dense_file) {
    DMOE_ASSIGN_OR_RETURN(const std::string name, dense_file->as_string());
    if (name != kDenseFile) {
      return root.member_error("dense_file", std::string("\"") + kDenseFile + "\" or null");
    }
  }
  DMOE_ASSIGN_OR_RETURN(JsonField dense, root.member("dense"));
  DMOE_RETURN_IF_ERROR(dense.expect_array());
  for (size_t i = 0; i < dense.json().size(); ++i) {
    DMOE_ASSIGN_OR_RETURN(SplitTensor t, parse_tensor(dense.element(i), true));
    index.dense.push_back(std::move(t));
  }
  // No two dense tensors share bytes.
  std::vector<const SplitTensor*> by_offset;
  for (const SplitTensor& t : index.dense) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SplitTensor* a, const SplitTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i - 1]->offset + by_offset[i - 1]->n_bytes > by_offset[i]->offset) {
      return dense.error("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                         "' overlap in " + kDenseFile);
    }
  }
  DMOE_ASSIGN_OR_RETURN(JsonField layers, root.member("expert_layers"));
  DMOE_RETURN_IF_ERROR(layers.expect_array());
  std::vector<bool> seen(static_cast<size_t>(config.n_layers), false);
  for (size_t i = 0; i < layers.json().size(); ++i) {
    DMOE_ASSIGN_OR_RETURN(SplitExpertLayer layer, parse_layer(layers.element(i), config));
    if (seen[static_cast<size_t>(layer.layer)]) {
      return layers.element(i).error("layer " + std::to_string(layer.layer) + " listed twice");
    }
    seen[static_cast<size_t>(layer.layer)] = true;
    index.expert_layers.push_back(std::move(layer));
  }
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (config.layer_is_moe[static_cast<size_t>(l)] && !seen[static_cast<size_t>(l)]) {
      return layers.error("MoE layer " + std::to_string(l) + " is missing");
    }
  }
  std::sort(index.expert_layers.begin(), index.expert_layers.end(),
            [](const SplitExpertLayer& a, const SplitExpertLayer& b) { return a.layer < b.layer; });
  return index;
}

Status SplitIndex::write(const std::filesystem::path& dir) const {
  ordered_json dense_json = ordered_json::array();
  for (const SplitTensor& t : dense) dense_json.push_back(tensor_json(t, true));
  ordered_json layers = ordered_json::array();
  for (const SplitExpertLayer& l : expert_layers) {
    ordered_json digests = ordered_json::array();
    for (const Digest& d : l.digests) digests.push_back(to_hex(d));
    layers.push_back({{"layer", l.layer},
                      {"gate", tensor_json(l.gate, false)},
                      {"up", tensor_json(l.up, false)},
                      {"down", tensor_json(l.down, false)},
                      {"sha256", std::move(digests)}});
  }
  ordered_json out = {{"format", kSplitFormat}, {"model_id", model_id}};
  if (manifest_identity) out["manifest_identity"] = to_hex(*manifest_identity);
  out["dense_file"] = has_dense ? ordered_json(kDenseFile) : ordered_json(nullptr);
  out["dense"] = std::move(dense_json);
  out["expert_layers"] = std::move(layers);
  const std::filesystem::path path = dir / kFileName;
  const std::filesystem::path temporary = dir / (std::string(kFileName) + ".tmp");
  DMOE_RETURN_IF_ERROR(write_file(temporary, out.dump(1) + "\n"));
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) return unavailable(path.string() + ": cannot write (" + ec.message() + ")");
  return Status::ok();
}

const SplitExpertLayer* SplitIndex::find_layer(int64_t layer) const {
  for (const SplitExpertLayer& l : expert_layers) {
    if (l.layer == layer) return &l;
  }
  return nullptr;
}

ExpertManifest SplitIndex::digests(const ModelConfig& config) const {
  std::vector<std::vector<Digest>> per_layer(static_cast<size_t>(config.n_layers));
  for (const SplitExpertLayer& l : expert_layers)
    per_layer[static_cast<size_t>(l.layer)] = l.digests;
  return ExpertManifest(std::move(per_layer), kFileName);
}

uint64_t SplitIndex::dense_file_bytes() const {
  uint64_t end = 0;
  for (const SplitTensor& t : dense) end = std::max(end, t.offset + t.n_bytes);
  return end;
}

}  // namespace dancemoe
