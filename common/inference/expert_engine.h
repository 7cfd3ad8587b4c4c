// ExpertEngine: where an ExpertComputer (common/inference/expert_compute.h)
// runs its experts -- the CPU kernels on a thread pool, or a GPU. This is
// the backend seam for expert compute: the executors, the expert service
// and the forward pass see only ExpertComputer and its host-memory
// interface; the engine behind it is chosen at load time
// (common/backend/backend_registry.h).
//
// Contract of begin(jobs, x, n_tokens, hidden, out), for every engine:
//   out[t] += sum_{j : t in job j} w_{j,t} * expert_j(x[t])
//   expert_j as ExpertJob defines it (expert_job.h): down(silu(gate x) * up x),
//   plus job.ffn's biases and clamped activation where set (gpt-oss). An
//   engine that cannot compute a job's ffn is never given one (the backend
//   refuses such models at load).
//   x, out: [n_tokens, hidden] host f32. The work may still be running when
//   begin() returns (a GPU engine only enqueues it); finish() waits for it and
//   completes `out`. The caller must not touch x, out or the jobs in between:
//   that window is where a node waits on the network for its remote experts.
// Not thread-safe: one begin/finish at a time per engine.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/inference/compute_precision.h"
#include "common/inference/expert_job.h"

namespace dancemoe {

class ExpertEngine {
 public:
  virtual ~ExpertEngine() = default;

  virtual ComputePrecision precision() const = 0;
  // For logs: "cpu", "cuda:0 (NVIDIA H100 80GB HBM3)", ...
  virtual std::string describe() const = 0;

  // True when begin() only enqueues the work (a GPU); false when begin()
  // computes everything itself (the CPU), so an ExpertComputer with several
  // devices runs it on a thread of its own to overlap the devices.
  virtual bool asynchronous() const { return false; }

  virtual void begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens,
                     int64_t hidden, float* out) = 0;
  virtual void finish() = 0;
};

}  // namespace dancemoe
