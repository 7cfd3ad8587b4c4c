#include "common/inference/expert_store.h"

#include <cstring>
#include <utility>
#include <vector>

#include "common/base/align.h"
#include "kernels/interleave.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe {
namespace {

constexpr uint64_t kPartAlign = 64;

}  // namespace

ExpertStore::ExpertStore(const Checkpoint& checkpoint, std::vector<int> numa_nodes,
                         ExpertFormat format)
    : checkpoint_(checkpoint),
      format_(format),
      n_layers_(checkpoint.config().n_layers),
      n_experts_(checkpoint.config().n_experts),
      slots_(static_cast<size_t>(n_layers_ * n_experts_)) {
  if (numa_nodes.empty()) numa_nodes.push_back(-1);
  for (int node : numa_nodes) {
    arenas_.push_back(std::make_unique<ExpertArena>(size_t{64} << 20, node));
  }
  residencies_.resize(arenas_.size());
  held_bytes_.assign(slots_.size(), 0);
  const ModelConfig& config = checkpoint.config();
  for (int64_t l = 0; l < n_layers_; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < n_experts_; ++e) {
      uint64_t bytes = 0;
      for (TensorRole role :
           {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
        const TensorLocation& t = checkpoint_.tensor(role, l, e);
        bytes +=
            static_cast<uint64_t>(t.shape[0] * kernels::weight_row_bytes(held_type(t), t.shape[1]));
      }
      held_bytes_[slot({static_cast<int32_t>(l), static_cast<int32_t>(e)})] = bytes;
    }
  }
}

void ExpertStore::set_residency(int32_t device, std::shared_ptr<ExpertResidency> residency) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device >= 0 && device < n_devices()) {
    residencies_[static_cast<size_t>(device)] = std::move(residency);
  }
}

kernels::WeightType ExpertStore::held_type() const {
  return format_.convert_to ? *format_.convert_to : checkpoint_.expert_type();
}

kernels::WeightType ExpertStore::held_type(const TensorLocation& t) const {
  if (!format_.convert_to) return t.type;
  const kernels::WeightType target = *format_.convert_to;
  return t.shape[1] % kernels::weight_block_values(target) == 0 ? target : t.type;
}

bool ExpertStore::held_interleaved(const TensorLocation& t) const {
  return format_.interleaves(held_type(t)) &&
         kernels::can_interleave(held_type(t), t.shape[0], t.shape[1]);
}

bool ExpertStore::holds_as_stored(ExpertRef key) const {
  for (TensorRole role :
       {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
    const TensorLocation& t = checkpoint_.tensor(role, key.layer, key.expert);
    if (held_type(t) != t.type) return false;
  }
  return true;
}

Status ExpertStore::check_installable(ExpertRef key) const {
  if (checkpoint_.expert_digests() == nullptr || holds_as_stored(key)) return Status::ok();
  return failed_precondition(
      "layer " + std::to_string(key.layer) + " expert " + std::to_string(key.expert) +
      ": the model's manifest lists the checkpoint's " +
      std::string(kernels::weight_type_name(checkpoint_.expert_type())) +
      " bytes, so another node's " + std::string(kernels::weight_type_name(held_type())) +
      " bytes cannot be checked against it; a node with --expert-type loads its experts from its "
      "own files");
}

void ExpertStore::convert_held(const TensorLocation& t, const uint8_t* stored, uint8_t* dst) const {
  // stored -> f32 -> held, a row at a time.
  const kernels::WeightType type = held_type(t);
  const int64_t rows = t.shape[0], cols = t.shape[1];
  const int64_t stored_row = kernels::weight_row_bytes(t.type, cols);
  const int64_t held_row = kernels::weight_row_bytes(type, cols);
  std::vector<float> values(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_values(t.type, stored + r * stored_row, cols, values.data());
    kernels::quantize_rows(type, values.data(), 1, cols, dst + r * held_row);
  }
}

void assign_expert(const ExpertWeights& weights, ExpertJob* job) {
  job->gate = weights.gate;
  job->up = weights.up;
  job->down = weights.down;
  job->device = weights.device;
  job->ffn = weights.ffn;
}

Status ExpertStore::check_device(int32_t device) const {
  if (device < 0 || device >= n_devices()) {
    return invalid_argument("device index " + std::to_string(device) + " is out of range [0, " +
                            std::to_string(n_devices()) + ")");
  }
  return Status::ok();
}

size_t ExpertStore::slot(ExpertRef key) const {
  return static_cast<size_t>(key.layer * n_experts_ + key.expert);
}

Status ExpertStore::check_key(ExpertRef key) const {
  if (key.layer < 0 || key.layer >= n_layers_) {
    return invalid_argument("layer " + std::to_string(key.layer) + " is out of range [0, " +
                            std::to_string(n_layers_) + ")");
  }
  if (!checkpoint_.config().layer_is_moe[static_cast<size_t>(key.layer)]) {
    return invalid_argument("layer " + std::to_string(key.layer) +
                            " is a dense layer and has no experts");
  }
  if (key.expert < 0 || key.expert >= n_experts_) {
    return invalid_argument("expert " + std::to_string(key.expert) + " is out of range [0, " +
                            std::to_string(n_experts_) + ")");
  }
  return Status::ok();
}

template <typename Fill>
Status ExpertStore::make_resident(ExpertRef key, int32_t device, Fill&& fill) {
  const TensorLocation& gate = checkpoint_.tensor(TensorRole::kExpertGate, key.layer, key.expert);
  const TensorLocation& up = checkpoint_.tensor(TensorRole::kExpertUp, key.layer, key.expert);
  const TensorLocation& down = checkpoint_.tensor(TensorRole::kExpertDown, key.layer, key.expert);
  auto expert = std::make_shared<ExpertWeights>();
  expert->key = key;
  expert->device = device;
  auto held_bytes = [&](const TensorLocation& t) {
    return static_cast<uint64_t>(t.shape[0] * kernels::weight_row_bytes(held_type(t), t.shape[1]));
  };
  auto view = [&](const TensorLocation& t, const uint8_t* data) {
    return kernels::WeightView{
        data, held_type(t), t.shape[0], t.shape[1],
        held_interleaved(t) ? kernels::WeightLayout::kInterleaved16 : kernels::WeightLayout::kRows};
  };
  const TensorLocation* parts[3] = {&gate, &up, &down};
  uint64_t offsets[3] = {0, 0, 0};
  offsets[1] = align_up(held_bytes(gate), kPartAlign);
  offsets[2] = offsets[1] + align_up(held_bytes(up), kPartAlign);
  DMOE_ASSIGN_OR_RETURN(expert->storage, arenas_[static_cast<size_t>(device)]->allocate(
                                             offsets[2] + held_bytes(down)));
  auto* base = static_cast<uint8_t*>(expert->storage.data());
  // Every part in the rows layout first: in its slot, or, when it is held
  // interleaved, in a per-thread buffer it is then interleaved from.
  thread_local std::vector<uint8_t> staged[3];
  uint8_t* rows_layout[3];
  for (int i = 0; i < 3; ++i) {
    if (held_interleaved(*parts[i])) {
      staged[i].resize(held_bytes(*parts[i]));
      rows_layout[i] = staged[i].data();
    } else {
      rows_layout[i] = base + offsets[i];
    }
    DMOE_RETURN_IF_ERROR(fill(*parts[i], rows_layout[i]));
  }
  // Nothing becomes resident as stored that the manifest does not vouch
  // for, whether it came from the files or from a peer (expert_manifest.h);
  // a converted expert's source was checked before conversion (load()).
  if (const ExpertManifest* manifest = checkpoint_.expert_digests();
      manifest && holds_as_stored(key)) {
    DMOE_RETURN_IF_ERROR(manifest->check(
        key, expert_digest({rows_layout[0], gate.n_bytes}, {rows_layout[1], up.n_bytes},
                           {rows_layout[2], down.n_bytes})));
  }
  for (int i = 0; i < 3; ++i) {
    if (held_interleaved(*parts[i])) {
      kernels::interleave_matrix(held_type(*parts[i]), rows_layout[i], parts[i]->shape[0],
                                 parts[i]->shape[1], base + offsets[i]);
    }
  }
  expert->gate = view(gate, base);
  expert->up = view(up, base + offsets[1]);
  expert->down = view(down, base + offsets[2]);
  expert->n_bytes = held_bytes(gate) + held_bytes(up) + held_bytes(down);
  return publish(std::move(expert));
}

// An expert whose stored matrices can be computed where they lie (a GGUF
// mapping): views only, no slot.
Status ExpertStore::make_resident_in_place(ExpertRef key, int32_t device) {
  auto expert = std::make_shared<ExpertWeights>();
  expert->key = key;
  expert->device = device;
  auto view = [&](TensorRole role) {
    const TensorLocation& t = checkpoint_.tensor(role, key.layer, key.expert);
    expert->n_bytes += t.n_bytes;
    return kernels::WeightView{t.mapped, t.type, t.shape[0], t.shape[1]};
  };
  expert->gate = view(TensorRole::kExpertGate);
  expert->up = view(TensorRole::kExpertUp);
  expert->down = view(TensorRole::kExpertDown);
  return publish(std::move(expert));
}

bool ExpertStore::usable_in_place(ExpertRef key) const {
  if (format_.convert_to || format_.copy_mapped) return false;
  for (TensorRole role :
       {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
    const TensorLocation& t = checkpoint_.tensor(role, key.layer, key.expert);
    if (!t.usable_in_place() || held_interleaved(t)) return false;
  }
  return true;
}

Status ExpertStore::attach_ffn(ExpertWeights* expert) const {
  const ModelConfig& c = checkpoint_.config();
  expert->ffn = ExpertFfn{};
  if (c.expert_activation == ExpertActivation::kClampedSwiGLU) {
    expert->ffn.clamped = true;
    expert->ffn.alpha = c.swiglu_alpha;
    expert->ffn.limit = c.swiglu_limit;
  }
  if (!c.expert_bias) return Status::ok();
  const ExpertRef key = expert->key;
  const TensorRole roles[3] = {TensorRole::kExpertGateBias, TensorRole::kExpertUpBias,
                               TensorRole::kExpertDownBias};
  int64_t total = 0;
  for (TensorRole role : roles) total += c.expected_shape(role)[0];
  expert->biases.assign(static_cast<size_t>(total), 0.0f);
  std::vector<uint8_t> stored;
  int64_t at = 0;
  const float* starts[3];
  for (int i = 0; i < 3; ++i) {
    const TensorLocation& t = checkpoint_.tensor(roles[i], key.layer, key.expert);
    stored.resize(t.n_bytes);
    DMOE_RETURN_IF_ERROR(checkpoint_.read_tensor(t, stored.data()));
    kernels::dequantize_values(t.type, stored.data(), t.shape[0], expert->biases.data() + at);
    starts[i] = expert->biases.data() + at;
    at += t.shape[0];
  }
  expert->ffn.gate_bias = starts[0];
  expert->ffn.up_bias = starts[1];
  expert->ffn.down_bias = starts[2];
  return Status::ok();
}

Status ExpertStore::publish(std::shared_ptr<ExpertWeights> expert) {
  DMOE_RETURN_IF_ERROR(attach_ffn(expert.get()));
  const ExpertRef key = expert->key;
  const int32_t device = expert->device;
  std::shared_ptr<ExpertResidency> residency;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    residency = residencies_[static_cast<size_t>(device)];
  }
  const uint64_t n_bytes = expert->n_bytes;
  std::shared_ptr<const ExpertWeights> published = std::move(expert);
  if (residency) DMOE_RETURN_IF_ERROR(residency->make_resident(published));
  std::shared_ptr<const ExpertWeights> replaced;  // told and freed outside the lock
  std::shared_ptr<const ExpertWeights> unused;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = slots_[slot(key)];
    // Another thread may have loaded it meanwhile; a copy on another device
    // is what a move replaces.
    if (entry != nullptr && entry->device == device) {
      unused = std::move(published);
    } else {
      if (entry != nullptr) resident_bytes_ -= entry->n_bytes;
      resident_bytes_ += n_bytes;
      replaced = std::exchange(entry, std::move(published));
    }
  }
  if (unused && residency) residency->release(*unused);
  release_from_device(replaced);
  return Status::ok();
}

void ExpertStore::release_from_device(const std::shared_ptr<const ExpertWeights>& dropped) {
  if (dropped == nullptr) return;
  std::shared_ptr<ExpertResidency> residency;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    residency = residencies_[static_cast<size_t>(dropped->device)];
  }
  if (residency) residency->release(*dropped);
}

Status ExpertStore::load(ExpertRef key, int32_t device) {
  DMOE_RETURN_IF_ERROR(check_key(key));
  DMOE_RETURN_IF_ERROR(check_device(device));
  if (std::shared_ptr<const ExpertWeights> w = get(key); w && w->device == device) {
    return Status::ok();
  }
  // A device with copies of its own (a GPU) finds its experts by their host
  // pointers, which an in-place expert shares with its other copies: it
  // gets a slot.
  bool has_residency;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    has_residency = residencies_[static_cast<size_t>(device)] != nullptr;
  }
  if (!has_residency && usable_in_place(key)) return make_resident_in_place(key, device);
  if (holds_as_stored(key)) {
    // A split checkpoint's file is named in errors (read_tensor names it
    // already when it is missing or of the wrong size).
    Status loaded = make_resident(key, device, [&](const TensorLocation& t, uint8_t* dst) {
      DMOE_RETURN_IF_ERROR(checkpoint_.read_tensor(t, dst));
      // Copied out of a mapping (a GGUF file): its pages need not stay in
      // this process as well.
      checkpoint_.drop_mapped_pages(t);
      return Status::ok();
    });
    if (!loaded.is_ok() && checkpoint_.is_split() &&
        loaded.code() == StatusCode::kInvalidArgument &&
        loaded.message().find(checkpoint_.expert_location(key)) == std::string::npos) {
      return loaded.with_context(checkpoint_.expert_location(key));
    }
    return loaded;
  }
  // Converted (--expert-type): the stored bytes are read whole, checked
  // against the manifest when there is one, then converted.
  const TensorLocation* parts[3] = {
      &checkpoint_.tensor(TensorRole::kExpertGate, key.layer, key.expert),
      &checkpoint_.tensor(TensorRole::kExpertUp, key.layer, key.expert),
      &checkpoint_.tensor(TensorRole::kExpertDown, key.layer, key.expert)};
  std::vector<uint8_t> stored[3];
  for (int i = 0; i < 3; ++i) {
    stored[i].resize(parts[i]->n_bytes);
    DMOE_RETURN_IF_ERROR(checkpoint_.read_tensor(*parts[i], stored[i].data()));
  }
  if (const ExpertManifest* manifest = checkpoint_.expert_digests()) {
    DMOE_RETURN_IF_ERROR(manifest->check(key, expert_digest(stored[0], stored[1], stored[2]))
                             .with_context(checkpoint_.expert_location(key)));
  }
  int next = 0;
  return make_resident(key, device, [&](const TensorLocation& t, uint8_t* dst) {
    const int i = next++;
    if (held_type(t) == t.type) {
      std::memcpy(dst, stored[i].data(), t.n_bytes);
    } else {
      convert_held(t, stored[i].data(), dst);
    }
    return Status::ok();
  });
}

Status ExpertStore::install(ExpertRef key, std::span<const uint8_t> bytes, int32_t device) {
  DMOE_RETURN_IF_ERROR(check_key(key));
  DMOE_RETURN_IF_ERROR(check_device(device));
  if (bytes.size() != expert_bytes(key)) {
    return invalid_argument("expert " + std::to_string(key.expert) + " of layer " +
                            std::to_string(key.layer) + " has " +
                            std::to_string(expert_bytes(key)) + " weight bytes, got " +
                            std::to_string(bytes.size()));
  }
  if (std::shared_ptr<const ExpertWeights> w = get(key); w && w->device == device) {
    return Status::ok();
  }
  DMOE_RETURN_IF_ERROR(check_installable(key));
  size_t at = 0;
  return make_resident(key, device, [&](const TensorLocation& t, uint8_t* dst) {
    const size_t n =
        static_cast<size_t>(t.shape[0] * kernels::weight_row_bytes(held_type(t), t.shape[1]));
    std::memcpy(dst, bytes.data() + at, n);
    at += n;
    return Status::ok();
  });
}

Status ExpertStore::load_many(const std::vector<ExpertRef>& keys, const LoadProgress& progress) {
  return load_many(keys, std::vector<int32_t>(keys.size(), 0), progress);
}

Status ExpertStore::load_many(const std::vector<ExpertRef>& keys,
                              const std::vector<int32_t>& devices, const LoadProgress& progress) {
  if (devices.size() != keys.size()) {
    return invalid_argument("load_many: " + std::to_string(devices.size()) + " devices for " +
                            std::to_string(keys.size()) + " experts");
  }
  uint64_t total = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    DMOE_RETURN_IF_ERROR(check_key(keys[i]));
    DMOE_RETURN_IF_ERROR(check_device(devices[i]));
    total += expert_bytes(keys[i]);
  }
  uint64_t done = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    DMOE_RETURN_IF_ERROR(load(keys[i], devices[i]));
    done += expert_bytes(keys[i]);
    if (progress) progress(done, total);
  }
  return Status::ok();
}

Status ExpertStore::load_all(const LoadProgress& progress) {
  std::vector<ExpertRef> keys;
  for (int32_t l = 0; l < n_layers_; ++l) {
    if (!checkpoint_.config().layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int32_t e = 0; e < n_experts_; ++e) keys.push_back({l, e});
  }
  return load_many(keys, progress);
}

bool ExpertStore::evict(ExpertRef key) {
  if (!check_key(key).is_ok()) return false;
  std::shared_ptr<const ExpertWeights> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = std::move(slots_[slot(key)]);
    slots_[slot(key)] = nullptr;
    if (dropped) resident_bytes_ -= dropped->n_bytes;
  }
  release_from_device(dropped);
  return dropped != nullptr;  // freed here, outside the lock, unless still in use
}

std::shared_ptr<const ExpertWeights> ExpertStore::get(ExpertRef key) const {
  if (key.layer < 0 || key.layer >= n_layers_ || key.expert < 0 || key.expert >= n_experts_) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_[slot(key)];
}

uint64_t ExpertStore::expert_bytes(ExpertRef key) const {
  if (key.layer < 0 || key.layer >= n_layers_ || key.expert < 0 || key.expert >= n_experts_) {
    return 0;
  }
  return held_bytes_[slot(key)];
}

uint64_t ExpertStore::resident_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resident_bytes_;
}

int64_t ExpertStore::n_resident() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t n = 0;
  for (const auto& e : slots_) n += e ? 1 : 0;
  return n;
}

std::vector<uint64_t> ExpertStore::resident_bytes_by_device() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint64_t> bytes(arenas_.size(), 0);
  for (const auto& e : slots_) {
    if (e) bytes[static_cast<size_t>(e->device)] += e->n_bytes;
  }
  return bytes;
}

std::vector<int64_t> ExpertStore::n_resident_by_device() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> n(arenas_.size(), 0);
  for (const auto& e : slots_) {
    if (e) ++n[static_cast<size_t>(e->device)];
  }
  return n;
}

std::vector<int32_t> ExpertStore::resident_devices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int32_t> devices;
  for (const auto& e : slots_) {
    if (e) devices.push_back(e->device);
  }
  return devices;
}

std::vector<ExpertRef> ExpertStore::resident_keys() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ExpertRef> keys;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i]) {
      keys.push_back({static_cast<int32_t>(static_cast<int64_t>(i) / n_experts_),
                      static_cast<int32_t>(static_cast<int64_t>(i) % n_experts_)});
    }
  }
  return keys;
}

}  // namespace dancemoe
