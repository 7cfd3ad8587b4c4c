// ExpertStore: the resident set of a node's experts. The expert -- the
// weights of one (layer, expert) pair: gate, up and down projections -- is
// the unit of storage, placement and migration. Each resident expert owns
// one aligned slot of host memory holding its three matrices in their
// on-disk dtype, and is held by one device of the process (an index into
// the runtime's device list, common/backend/device_options.h): the device
// whose engine computes it. Every device has its own arena, so a cpu:N
// device on a NUMA machine keeps its experts in its node's memory; a GPU
// device's experts keep their host copy here too (the backend copies them
// to the GPU), which also serves weight transfers to peers.
//
// Thread-safety: all methods may be called concurrently. get() hands out a
// shared_ptr, so an expert evicted while a forward pass still uses it stays
// alive until that pass drops it (migration evicts under live traffic).
// Loading reads from the checkpoint outside the lock, so serving is not
// blocked by a load.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/inference/dense_weights.h"
#include "common/inference/expert_arena.h"
#include "common/inference/expert_job.h"
#include "common/inference/expert_residency.h"
#include "common/model/checkpoint.h"
#include "common/model/expert_ref.h"
#include "kernels/kernels.h"

namespace dancemoe {

struct ExpertWeights {
  ExpertRef key;
  int32_t device = 0;  // index of the device that holds it
  ExpertArena::Slot storage;
  kernels::WeightView gate;  // [moe_intermediate, hidden]
  kernels::WeightView up;    // [moe_intermediate, hidden]
  kernels::WeightView down;  // [hidden, moe_intermediate]
  uint64_t n_bytes = 0;      // exact weight bytes (sum of the three tensors)
  // Biases and activation (gpt-oss; plain otherwise). The biases are read
  // from the checkpoint's dense part whenever the expert becomes resident
  // -- also when its weights came from a peer -- and live in `biases`.
  ExpertFfn ffn;
  std::vector<float> biases;  // [inter] gate, [inter] up, [hidden] down
};

// How the store holds experts. By default as stored: a GGUF file's experts
// are used in place in its memory mapping (no copy; migration-installed
// ones and those of a device with copies of its own, a GPU, get arena
// slots), a safetensors checkpoint's are read into slots.
// With `convert_to` (a node's --expert-type), each expert is read, widened
// and re-quantized into that format at load (gguf/gguf_recipe.h's
// fallback keeps matrices whose rows are not whole blocks in their stored
// format); sizes, transfers and installs are then in that format.
struct ExpertFormat {
  std::optional<kernels::WeightType> convert_to;
  // Copy experts out of a GGUF mapping into the arenas (huge pages, NUMA
  // binding) instead of using them in place.
  bool copy_mapped = false;
  // Hold Q4_K / Q5_K / Q6_K / Q8_0 matrices of whole groups of 16 rows interleaved for the CPU
  // kernels that compute them so (kernels/interleave.h; the runtime asks for
  // it where the CPU level has that kernel and every device is a CPU). Only
  // the copy in memory changes, not its size: transfers, install() and
  // digests keep the held format's rows layout. Such experts are copied out
  // of a GGUF mapping, whose pages are then dropped from the process (they
  // stay in the page cache).
  bool interleave_k = false;
  // The same for bf16 matrices (rows a multiple of 16), for the AVX-512 BF16
  // matmul (kernels::CpuKernels::interleaved_bf16).
  bool interleave_bf16 = false;

  // Whether matrices held in `type` are interleaved (where their shape can be).
  bool interleaves(kernels::WeightType type) const {
    return type == kernels::WeightType::kBF16 ? interleave_bf16 : interleave_k;
  }
};

class ExpertStore {
 public:
  // The checkpoint must outlive the store. numa_nodes[d] is the NUMA node
  // device d's experts are bound to (-1: none); one entry per device.
  explicit ExpertStore(const Checkpoint& checkpoint, std::vector<int> numa_nodes = {-1},
                       ExpertFormat format = {});

  // The format experts are held in: convert_to, or the stored one.
  kernels::WeightType held_type() const;
  const ExpertFormat& format() const { return format_; }
  const Checkpoint& checkpoint() const { return checkpoint_; }

  int32_t n_devices() const { return static_cast<int32_t>(arenas_.size()); }
  // Device `device` keeps copies of its experts (a GPU): told of every expert
  // that arrives on it or leaves it from now on. Set before loading.
  void set_residency(int32_t device, std::shared_ptr<ExpertResidency> residency);

  // Reads the expert from the checkpoint onto `device` unless it is already
  // resident there; one resident on another device moves (a fresh copy on
  // the new device replaces it; users of the old copy keep it until they
  // drop it). invalid_argument for a layer without experts, an index or a
  // device out of range, and for weights whose digest is not the manifest's
  // (expert_manifest.h; install() checks the same).
  Status load(ExpertRef key, int32_t device = 0);
  // Installs an expert from its weight bytes in the held layout -- gate, up
  // and down back to back, each in its held format -- e.g. weights fetched
  // from a peer during a migration. invalid_argument when the byte
  // count is not the expert's size or the digest is not the manifest's,
  // failed_precondition when it cannot be checked (check_installable); a
  // no-op when it is already resident on `device`.
  Status install(ExpertRef key, std::span<const uint8_t> bytes, int32_t device = 0);
  // Loads a list of experts onto device 0, or onto devices[i] each (same
  // length as keys), reporting progress in bytes.
  Status load_many(const std::vector<ExpertRef>& keys, const LoadProgress& progress = {});
  Status load_many(const std::vector<ExpertRef>& keys, const std::vector<int32_t>& devices,
                   const LoadProgress& progress = {});
  // Loads every expert of every MoE layer onto device 0.
  Status load_all(const LoadProgress& progress = {});
  // Drops the store's reference; returns false when it was not resident.
  bool evict(ExpertRef key);

  // nullptr when not resident (or out of range).
  std::shared_ptr<const ExpertWeights> get(ExpertRef key) const;
  bool is_resident(ExpertRef key) const { return get(key) != nullptr; }

  // Exact bytes of an expert's weights as held, resident or not (from the
  // tensor index and the held format); 0 for a key outside the model or in
  // a dense layer.
  uint64_t expert_bytes(ExpertRef key) const;
  uint64_t resident_bytes() const;
  int64_t n_resident() const;
  std::vector<ExpertRef> resident_keys() const;
  // Per device: bytes and number of the experts it holds. [n_devices]
  std::vector<uint64_t> resident_bytes_by_device() const;
  std::vector<int64_t> n_resident_by_device() const;
  // The device of every resident expert, parallel to resident_keys().
  std::vector<int32_t> resident_devices() const;

  Status check_key(ExpertRef key) const;
  // Every matrix of the expert is held in its stored format (no conversion).
  bool holds_as_stored(ExpertRef key) const;
  // ok when install() can take a peer's bytes of `key`: failed_precondition
  // when the store converts the expert and the checkpoint has a manifest --
  // the manifest's digests are of the stored bytes, so converted ones from
  // a peer could not be verified.
  Status check_installable(ExpertRef key) const;

 private:
  size_t slot(ExpertRef key) const;
  // Allocates the expert's storage, lets `fill` write the three tensors at
  // their offsets, and makes it resident.
  template <typename Fill>
  Status make_resident(ExpertRef key, int32_t device, Fill&& fill);
  Status make_resident_in_place(ExpertRef key, int32_t device);
  bool usable_in_place(ExpertRef key) const;
  // Makes `expert` the resident copy of its key (unless another thread has
  // put one on the same device meanwhile), after attach_ffn.
  Status publish(std::shared_ptr<ExpertWeights> expert);
  // Sets expert->ffn from the config, reading the expert's biases.
  Status attach_ffn(ExpertWeights* expert) const;
  Status check_device(int32_t device) const;
  // Tells the device of an expert the store dropped (no lock held).
  void release_from_device(const std::shared_ptr<const ExpertWeights>& dropped);
  // The held format of one of an expert's matrices.
  kernels::WeightType held_type(const TensorLocation& t) const;
  // The matrix is held interleaved (ExpertFormat::interleave_k).
  bool held_interleaved(const TensorLocation& t) const;
  // Writes t's stored bytes `stored` converted to its held format into dst.
  void convert_held(const TensorLocation& t, const uint8_t* stored, uint8_t* dst) const;

  const Checkpoint& checkpoint_;
  ExpertFormat format_;
  std::vector<std::unique_ptr<ExpertArena>> arenas_;           // [device]
  std::vector<std::shared_ptr<ExpertResidency>> residencies_;  // [device], null: none
  int64_t n_layers_;
  int64_t n_experts_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const ExpertWeights>> slots_;  // [layer * n_experts + expert]
  // expert_bytes() of every slot, computed once: the distributed executor
  // asks for them per remote piece per layer, and each answer from the
  // tensor index formats three tensor names and hashes them.
  std::vector<uint64_t> held_bytes_;
  uint64_t resident_bytes_ = 0;
};

// Points a job at a resident expert's weights and device (its tokens and
// gate weights are the caller's).
void assign_expert(const ExpertWeights& weights, ExpertJob* job);

}  // namespace dancemoe
