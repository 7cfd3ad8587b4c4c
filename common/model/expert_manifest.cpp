#include "common/model/expert_manifest.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "common/base/file_util.h"
#include "common/base/sha256.h"
#include "common/model/checkpoint.h"

namespace dancemoe {
namespace {

constexpr const char* kManifestFormat = "dancemoe-expert-manifest-v1";
constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;

std::string expert_label(ExpertRef key) {
  return "layer " + std::to_string(key.layer) + " expert " + std::to_string(key.expert);
}

}  // namespace

std::optional<Digest> digest_from_hex(std::string_view text) {
  if (text.size() != 64) return std::nullopt;
  Digest out{};
  for (size_t i = 0; i < 32; ++i) {
    int byte = 0;
    for (size_t j = 0; j < 2; ++j) {
      const char c = text[2 * i + j];
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      if (v < 0) return std::nullopt;
      byte = byte * 16 + v;
    }
    out[i] = static_cast<uint8_t>(byte);
  }
  return out;
}

Digest expert_digest(std::span<const uint8_t> gate, std::span<const uint8_t> up,
                     std::span<const uint8_t> down) {
  Sha256 hash;
  hash.update(gate);
  hash.update(up);
  hash.update(down);
  return hash.finish();
}

Result<std::optional<ExpertManifest>> ExpertManifest::read(const std::filesystem::path& dir,
                                                           const ModelConfig& config) {
  const std::filesystem::path path = dir / kFileName;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<ExpertManifest>();
  DMOE_ASSIGN_OR_RETURN(const std::string text, read_file(path, kMaxManifestBytes));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  const std::string file = path.string();
  if (!j.is_object() || j.value("format", std::string()) != kManifestFormat) {
    return invalid_argument(file + ": field 'format': expected \"" + std::string(kManifestFormat) +
                            "\"");
  }
  if (!j.contains("experts") || !j["experts"].is_object()) {
    return invalid_argument(file + ": field 'experts': expected an object of layers");
  }
  ExpertManifest m;
  m.digests_.resize(static_cast<size_t>(config.n_layers));
  for (const auto& [layer_text, list] : j["experts"].items()) {
    const std::string at = file + ": experts['" + layer_text + "']";
    size_t used = 0;
    int64_t layer = -1;
    try {
      layer = std::stoll(layer_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != layer_text.size() || layer < 0 || layer >= config.n_layers ||
        !config.layer_is_moe[static_cast<size_t>(layer)]) {
      return invalid_argument(at + ": not a MoE layer of the model");
    }
    if (!list.is_array() || static_cast<int64_t>(list.size()) != config.n_experts) {
      return invalid_argument(at + ": expected " + std::to_string(config.n_experts) +
                              " digests, one per expert");
    }
    std::vector<Digest>& digests = m.digests_[static_cast<size_t>(layer)];
    for (size_t e = 0; e < list.size(); ++e) {
      std::optional<Digest> d =
          list[e].is_string() ? digest_from_hex(list[e].get<std::string>()) : std::nullopt;
      if (!d) {
        return invalid_argument(at + "[" + std::to_string(e) +
                                "]: expected 64 lower-case hex digits (SHA-256)");
      }
      digests.push_back(*d);
    }
  }
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (config.layer_is_moe[static_cast<size_t>(l)] && m.digests_[static_cast<size_t>(l)].empty()) {
      return invalid_argument(file + ": experts: MoE layer " + std::to_string(l) +
                              " is missing (regenerate with `dancemoe model manifest`)");
    }
  }
  return std::optional<ExpertManifest>(std::move(m));
}

Result<ExpertManifest> ExpertManifest::write(
    const Checkpoint& checkpoint, const std::function<void(uint64_t, uint64_t)>& progress) {
  const ModelConfig& config = checkpoint.config();
  uint64_t total = 0;
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config.n_experts; ++e) total += checkpoint.expert_bytes(l, e);
  }
  ExpertManifest m;
  m.digests_.resize(static_cast<size_t>(config.n_layers));
  nlohmann::ordered_json experts = nlohmann::ordered_json::object();
  std::vector<uint8_t> bytes[3];
  uint64_t done = 0;
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (int64_t e = 0; e < config.n_experts; ++e) {
      const TensorRole roles[3] = {TensorRole::kExpertGate, TensorRole::kExpertUp,
                                   TensorRole::kExpertDown};
      for (int i = 0; i < 3; ++i) {
        const TensorLocation& t = checkpoint.tensor(roles[i], l, e);
        bytes[i].resize(t.n_bytes);
        DMOE_RETURN_IF_ERROR(checkpoint.read_tensor(t, bytes[i].data()));
      }
      const Digest d = expert_digest(bytes[0], bytes[1], bytes[2]);
      m.digests_[static_cast<size_t>(l)].push_back(d);
      list.push_back(to_hex(d));
      done += checkpoint.expert_bytes(l, e);
      if (progress) progress(done, total);
    }
    experts[std::to_string(l)] = std::move(list);
  }
  const nlohmann::ordered_json out = {{"format", kManifestFormat}, {"experts", std::move(experts)}};
  const std::filesystem::path path = checkpoint.dir() / kFileName;
  const std::filesystem::path temporary = checkpoint.dir() / (std::string(kFileName) + ".tmp");
  DMOE_RETURN_IF_ERROR(write_file(temporary, out.dump(1) + "\n"));
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) return unavailable(path.string() + ": cannot write (" + ec.message() + ")");
  return m;
}

const Digest* ExpertManifest::find(ExpertRef key) const {
  if (key.layer < 0 || static_cast<size_t>(key.layer) >= digests_.size()) return nullptr;
  const std::vector<Digest>& layer = digests_[static_cast<size_t>(key.layer)];
  if (key.expert < 0 || static_cast<size_t>(key.expert) >= layer.size()) return nullptr;
  return &layer[static_cast<size_t>(key.expert)];
}

Status ExpertManifest::check(ExpertRef key, const Digest& digest) const {
  const Digest* want = find(key);
  if (want == nullptr)
    return invalid_argument(expert_label(key) + " is not in the model's manifest");
  if (*want != digest) {
    return invalid_argument("the weights of " + expert_label(key) + " have SHA-256 " +
                            to_hex(digest) + ", the model's manifest (" + source_ + ") says " +
                            to_hex(*want) + "; refusing them");
  }
  return Status::ok();
}

Digest ExpertManifest::identity() const {
  Sha256 hash;
  hash.update("dancemoe-expert-manifest-v1\n");
  for (size_t l = 0; l < digests_.size(); ++l) {
    for (size_t e = 0; e < digests_[l].size(); ++e) {
      hash.update(std::to_string(l) + " " + std::to_string(e) + " " + to_hex(digests_[l][e]) +
                  "\n");
    }
  }
  return hash.finish();
}

size_t ExpertManifest::size() const {
  size_t n = 0;
  for (const auto& layer : digests_) n += layer.size();
  return n;
}

}  // namespace dancemoe
