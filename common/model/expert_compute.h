// ExpertComputer: runs a set of SwiGLU feed-forward experts over the tokens
// routed to them and adds each token's gate-weighted sum of expert outputs
// into an output matrix:
//
//   out[t] += sum_{j : t in job j} w_{j,t} * down_j( silu(gate_j x[t]) * up_j x[t] )
//
// It is the one place experts are computed on a CPU: the local MoE layer,
// dense MLP layers (one job, weight 1) and -- in the node agent -- the
// expert service answering peers all use it.
//
// Work split (no locks, one pool call per phase): a phase-1 chunk is a slice
// of the intermediate rows of every job (gate, up and the SwiGLU for that
// slice); a phase-2 chunk is a slice of the hidden columns of every job's
// down projection and of `out`, so no two chunks write the same element.
//
// Not thread-safe: one ExpertComputer per thread that runs forwards (it
// owns scratch buffers that only grow).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/model/activations.h"
#include "common/runtime/thread_pool.h"
#include "kernels/kernels.h"

namespace dancemoe {

struct ExpertJob {
  kernels::WeightView gate;     // [inter, hidden]
  kernels::WeightView up;       // [inter, hidden]
  kernels::WeightView down;     // [hidden, inter]
  std::vector<int32_t> tokens;  // rows of x this expert serves
  std::vector<float> weights;   // gate weight per served token
};

class ExpertComputer {
 public:
  ExpertComputer(ThreadPool& pool, ComputePrecision precision);

  ComputePrecision precision() const { return precision_; }

  // x: [n_tokens, hidden]; out: [n_tokens, hidden], accumulated into.
  void run(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
           float* out);

 private:
  ThreadPool& pool_;
  ComputePrecision precision_;
  ActivationBuffer gathered_;  // [rows, hidden]: x rows of every job, job after job
  ActivationBuffer hidden_;    // [rows, inter]: SwiGLU outputs
  std::vector<float> gate_;    // [rows, inter]
  std::vector<float> up_;      // [rows, inter]
  std::vector<float> down_;    // [rows, hidden]
  std::vector<int64_t> job_offsets_;
};

}  // namespace dancemoe
