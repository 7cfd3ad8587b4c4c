// ModelRuntime: a runnable model on a list of devices -- the one assembly of
// the runtime (DESIGN.md §2). The CLI's model commands (generate, logits,
// bench), the node agent and the tests build their model here; nothing else
// wires a model by hand.
//
// open() in order, failing before any weight is read where it can:
//   1. the devices of options.devices.devices: CPU devices resolved to cores
//      and memory (common/backend/cpu/cpu_topology.h), GPUs probed;
//   2. each device's expert budget (common/assembly/device_budgets.h);
//   3. where the initial experts go (options.experts / expert_devices, or
//      every expert spread over the devices by budget) -- refused when they
//      do not fit;
//   4. the dense weights and the experts read into host memory (an
//      ExpertStore with one arena per device);
//   5. compute: a thread pool per CPU device (pinned to its cores), the
//      GPU backend for the GPUs (dense part on the first), one ExpertEngine
//      per device behind the forward's ExpertComputer, the forward engine
//      (the first GPU's, else the CPU forward over every CPU device's
//      cores), the MoE executor (options.make_executor, else a local one)
//      and the Transformer.
//
// Experts loaded later (a node's migrations) go through experts() onto a
// device index; the device's engine computes them from then on. A GPU gets
// expert slots for its whole budget at open (reserve_gpu_expert_budget),
// and the store copies experts
// put on it later into a free slot (ExpertResidency), so it computes them
// on the GPU (see docs/devices.md).
//
// Owns all its parts; one forward at a time (the Transformer's contract);
// experts() and new_expert_computer() may be used from other threads.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/assembly/runtime_devices.h"
#include "common/backend/device_options.h"
#include "common/base/status.h"
#include "common/inference/compute_precision.h"
#include "common/inference/dense_weights.h"
#include "common/inference/expert_compute.h"
#include "common/inference/expert_store.h"
#include "common/inference/moe_executor.h"
#include "common/inference/transformer.h"
#include "common/model/checkpoint.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe {

class ModelRuntime;

// The devices and their budgets (runtime_devices.h: devices, precision,
// expert_memory_bytes, host_reserved_bytes, kv_cache_tokens), and what to load.
struct RuntimeOptions : DeviceRequest {
  // Experts to load at open: nullopt loads every expert; an empty list none.
  std::optional<std::vector<ExpertRef>> experts;
  // Device index (into devices.devices) of each entry of `experts`; empty:
  // spread over the devices, each expert to the one with the most budget left.
  std::vector<int32_t> expert_devices;
  LoadProgress progress;  // over dense + initial expert bytes
  // Reserve each GPU's whole expert budget at open so experts can arrive
  // later (a node's migrations); false: room for the initial experts only.
  bool reserve_gpu_expert_budget = false;
  // --expert-type: hold the experts in this format, converting them at load
  // (a bf16 checkpoint's experts quantized to q4_K, say); nullopt: as stored.
  std::optional<kernels::WeightType> expert_type;
  // A GGUF's weights are used in place in its memory mapping (no copy, no
  // load time, resident memory = the file's pages; in 2 MiB pages where the
  // kernel gives the file huge folios, MappedFile::prefer_huge_pages). true
  // copies them into anonymous huge-page memory instead (--copy-weights):
  // as fast to stream where the page cache cannot be huge, at the price of a
  // load copy.
  bool copy_mapped_weights = false;
  // Hold Q4_K / Q5_K / Q6_K / Q8_0 matrices, and bf16 experts, interleaved
  // for the CPU kernels that compute them so, where the CPU has them
  // (ExpertFormat::interleave_k, interleave_bf16); false keeps the rows
  // layout as stored (`--rows-layout` on the node and the CLI commands).
  bool interleave_k = true;
  // false: experts only (`dancemoe-node --role experts`) -- no dense
  // weights, forward, executor or Transformer (has_dense() is false; dense(),
  // executor() and transformer() must not be called); CPU devices only.
  bool load_dense = true;
  // Builds the MoE executor from the assembled parts (the node's
  // distributed executor); null: a LocalMoeExecutor.
  std::function<Result<std::unique_ptr<MoeExecutor>>(ModelRuntime&)> make_executor;
};

class ModelRuntime {
 public:
  static Result<std::unique_ptr<ModelRuntime>> open(const std::filesystem::path& model_dir,
                                                    const RuntimeOptions& options);
  // With a checkpoint the caller opened already (a node checks it first).
  static Result<std::unique_ptr<ModelRuntime>> open(std::unique_ptr<Checkpoint> checkpoint,
                                                    const RuntimeOptions& options);
  ~ModelRuntime();

  const Checkpoint& checkpoint() const { return *checkpoint_; }
  const ModelConfig& config() const { return checkpoint_->config(); }
  bool has_dense() const { return dense_.has_value(); }
  const DenseWeights& dense() const { return *dense_; }
  ExpertStore& experts() { return *store_; }
  const ExpertStore& experts() const { return *store_; }
  const std::vector<RuntimeDevice>& devices() const { return devices_; }
  // Index of the device named `name`, or -1.
  int device_index(const std::string& name) const;
  ComputePrecision precision() const { return precision_; }
  // The forward's computer: one engine per device.
  ExpertComputer& expert_computer() { return *computer_; }
  MoeExecutor& executor() { return *executor_; }
  Transformer& transformer() { return *transformer_; }
  ThreadPool& forward_pool() { return *forward_pool_; }

  // A computer over every device with engines of its own (own thread pools,
  // own GPU streams) for a thread besides the forward's -- the expert
  // service's workers. `cpu_threads` > 0 caps each CPU device's threads.
  Result<std::unique_ptr<ExpertComputer>> new_expert_computer(int cpu_threads = 0) const;

  // Weight bytes held in memory: dense part plus resident experts.
  uint64_t resident_weight_bytes() const;
  // Where the forward and the experts run, for logs.
  const std::string& description() const { return description_; }

 private:
  struct Gpus;  // the GPU backend's state (model_runtime.cpp)
  ModelRuntime() = default;

  Status make_store(const RuntimeOptions& options);
  Status choose_initial_experts(const RuntimeOptions& options, std::vector<ExpertRef>* keys,
                                std::vector<int32_t>* devices) const;
  Status load_weights(const RuntimeOptions& options, const std::vector<ExpertRef>& keys,
                      const std::vector<int32_t>& devices);
  Status build_compute(const RuntimeOptions& options, const std::vector<ExpertRef>& keys,
                       const std::vector<int32_t>& devices);

  std::unique_ptr<Checkpoint> checkpoint_;
  std::vector<RuntimeDevice> devices_;
  backend::DeviceOptions device_options_;
  ComputePrecision precision_ = ComputePrecision::kBF16;
  std::optional<DenseWeights> dense_;
  std::unique_ptr<ExpertStore> store_;
  std::unique_ptr<ThreadPool> forward_pool_;
  std::vector<std::unique_ptr<ThreadPool>> device_pools_;  // [device], null for "cpu" and GPUs
  std::unique_ptr<Gpus> gpus_;
  std::unique_ptr<ExpertComputer> computer_;
  std::unique_ptr<MoeExecutor> executor_;
  std::unique_ptr<Transformer> transformer_;
  std::string description_;
};

int default_thread_count();

}  // namespace dancemoe
