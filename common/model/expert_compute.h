// ExpertComputer: runs a set of SwiGLU feed-forward experts over the tokens
// routed to them and adds each token's gate-weighted sum of expert outputs
// into an output matrix:
//
//   out[t] += sum_{j : t in job j} w_{j,t} * down_j( silu(gate_j x[t]) * up_j x[t] )
//
// It is the one place experts are computed: the local MoE layer, dense MLP
// layers (one job, weight 1) and -- in the node agent -- the expert service
// answering peers all use it. Where the work runs is its ExpertEngine
// (common/backend/expert_engine.h): the CPU kernels on a ThreadPool
// (common/backend/cpu/cpu_expert_engine.h, what the (pool, precision)
// constructor makes), or a GPU engine from the backend registry. Inputs and
// outputs are host memory either way.
//
// begin()/finish() split run() for callers that have something to wait on
// meanwhile (a node's remote experts): with a GPU engine begin() only
// enqueues the work. x, out and the jobs must stay untouched until finish().
//
// Not thread-safe: one ExpertComputer per thread that runs forwards.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/backend/expert_engine.h"
#include "common/model/compute_precision.h"
#include "common/model/expert_job.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe {

class ExpertComputer {
 public:
  ExpertComputer(ThreadPool& pool, ComputePrecision precision);
  explicit ExpertComputer(std::unique_ptr<backend::ExpertEngine> engine);
  ~ExpertComputer();
  ExpertComputer(const ExpertComputer&) = delete;
  ExpertComputer& operator=(const ExpertComputer&) = delete;

  ComputePrecision precision() const { return engine_->precision(); }
  std::string describe() const { return engine_->describe(); }

  // x: [n_tokens, hidden]; out: [n_tokens, hidden], accumulated into.
  void run(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
           float* out) {
    engine_->begin(jobs, x, n_tokens, hidden, out);
    engine_->finish();
  }
  void begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
             float* out) {
    engine_->begin(jobs, x, n_tokens, hidden, out);
  }
  void finish() { engine_->finish(); }

 private:
  std::unique_ptr<backend::ExpertEngine> engine_;
};

}  // namespace dancemoe
