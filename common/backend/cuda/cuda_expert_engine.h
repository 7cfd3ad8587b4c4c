// CudaExpertEngine: the CUDA backend's ExpertEngine
// (common/inference/expert_engine.h) -- ExpertComputer jobs given in host
// memory, computed on the GPUs that hold their experts. This is what a
// node's executor and expert service reach through ExpertComputer when the
// model is on GPUs.
//
// begin(): each job is matched to its device copy (DeviceWeights::
// find_expert, by the job's host weight pointers, under the weights' read
// lock until the kernels are queued); per device, the tokens
// and the job table are staged in page-locked memory and sent in one copy,
// then the grouped expert kernels and the weighted combine run on the
// engine's own stream of that device (not the forward's: a node's expert
// service runs beside its forward), and the device's partial sum is copied
// back. Nothing waits: begin() returns with the GPUs busy, which is the
// window a node spends on its remote experts. finish() waits for every
// device and adds the partial sums into `out`, devices in order. Jobs whose
// weights no device holds run on the CPU engine inside begin(). A device
// has a lane when it has expert slots, even if they are empty at creation
// (a node's experts arrive with its first placement).
//
// Batches beyond the workspace (max_tokens tokens, or more groups / pairs
// than it holds) are done in pieces, synchronously. Memory is allocated at
// creation only. Not thread-safe: one begin/finish at a time.
#pragma once

#include <memory>
#include <vector>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/backend/cuda/cuda_device.h"
#include "common/backend/cuda/device_weights.h"
#include "common/inference/expert_engine.h"

namespace dancemoe::backend::cuda {

class CudaExpertEngine final : public ExpertEngine {
 public:
  static uint64_t workspace_bytes(const ModelConfig& config, int64_t max_tokens);

  // `device_index` (into weights->devices()) restricts the engine to that
  // GPU -- the one device of a runtime it serves; jobs whose weights are on
  // another GPU or none run on the CPU fallback. -1: every GPU. `budget`:
  // whether its workspaces count against the devices' budgets.
  static Result<std::unique_ptr<CudaExpertEngine>> create(
      const ModelConfig& config, std::shared_ptr<const DeviceWeights> weights, ThreadPool& pool,
      int64_t max_tokens, int device_index = -1, Budget budget = Budget::kCounted);
  ~CudaExpertEngine() override;

  ComputePrecision precision() const override { return ComputePrecision::kBF16; }
  std::string describe() const override;
  bool asynchronous() const override { return true; }
  void begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
             float* out) override;
  void finish() override;

  struct Lane;  // one device's stream, workspace and staging

 private:
  CudaExpertEngine(std::shared_ptr<const DeviceWeights> weights, ThreadPool& pool);
  // Runs the jobs of `lane` for tokens [t0, t1), adding into its device delta.
  void run_lane(Lane& lane, std::span<const ExpertJob> jobs, const std::vector<int32_t>& job_ids,
                const float* x, int64_t t0, int64_t t1, int64_t hidden);
  void collect(Lane& lane, float* out);

  std::shared_ptr<const DeviceWeights> weights_;
  CpuExpertEngine cpu_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  int64_t max_tokens_ = 0;
  int only_device_ = -1;
  int64_t max_groups_ = 0;
  int64_t max_pairs_ = 0;
  int64_t max_inter_ = 0;
  // begin() -> finish() state.
  std::vector<std::vector<int32_t>> jobs_on_;  // per device, job indices
  std::vector<ExpertJob> cpu_jobs_;
  float* out_ = nullptr;
  int64_t n_tokens_ = 0;
  int64_t hidden_ = 0;
  bool pending_ = false;
};

}  // namespace dancemoe::backend::cuda
