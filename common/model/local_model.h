// LocalModel: everything needed to run a model in this process, wired
// together -- the opened checkpoint, the dense weights, an ExpertStore with
// all or some experts resident, a thread pool, and a Transformer whose MoE
// layers run on a LocalMoeExecutor. The single-node runtime (`dancemoe
// generate`, `logits`, `bench`) and tests use it; the node agent builds the
// same parts with its distributed executor instead.
//
// options.devices picks the backend: the CPU (default) or GPUs through the
// backend registry (common/backend/backend_registry.h), which copies the
// dense part and the resident experts to the devices once, at open; the
// host copies stay in the ExpertStore (the unit of placement and migration).
//
// Owns all its parts; not thread-safe (one forward at a time).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/model/compute_precision.h"
#include "common/model/dense_weights.h"
#include "common/model/expert_compute.h"
#include "common/model/expert_store.h"
#include "common/model/moe_executor.h"
#include "common/model/transformer.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe {

struct LocalModelOptions {
  int n_threads = 0;  // 0: one per online CPU
  ComputePrecision precision = ComputePrecision::kBF16;
  std::optional<std::vector<ExpertRef>> experts;  // nullopt: load every expert
  LoadProgress progress;                          // over dense + expert bytes
  // Where the model runs ("cpu", "cuda:0", ...), budgets, batch and KV sizes.
  backend::DeviceOptions devices;
  // GPU ordinal of each entry of `experts` (the placement's (node, device));
  // empty: the backend spreads the experts over the selected GPUs.
  std::vector<int> expert_devices;
};

class LocalModel {
 public:
  static Result<std::unique_ptr<LocalModel>> open(const std::filesystem::path& model_dir,
                                                  const LocalModelOptions& options);

  const Checkpoint& checkpoint() const { return *checkpoint_; }
  const ModelConfig& config() const { return checkpoint_->config(); }
  const DenseWeights& dense() const { return *dense_; }
  ExpertStore& experts() { return *experts_; }
  ThreadPool& pool() { return *pool_; }
  // Computes experts on the model's backend (the node's expert service uses it).
  ExpertComputer& expert_computer() { return *computer_; }
  Transformer& transformer() { return *transformer_; }

  // Weight bytes held in memory: dense part plus resident experts.
  uint64_t resident_weight_bytes() const;
  // Where the forward runs and what each device holds, for logs.
  const std::string& backend_description() const { return backend_description_; }

 private:
  LocalModel() = default;

  std::unique_ptr<Checkpoint> checkpoint_;
  std::optional<DenseWeights> dense_;
  std::unique_ptr<ExpertStore> experts_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ExpertComputer> computer_;
  std::unique_ptr<LocalMoeExecutor> executor_;
  std::unique_ptr<Transformer> transformer_;
  std::string backend_description_;
};

int default_thread_count();

}  // namespace dancemoe
