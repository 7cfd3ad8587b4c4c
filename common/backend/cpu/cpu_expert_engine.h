// CpuExpertEngine: experts on the CPU kernels and a ThreadPool (the default
// ExpertEngine, common/inference/expert_engine.h). begin() does all the work;
// finish() has nothing left to do.
//
// Work split, three pool calls: (1) gate, up and SwiGLU, (2) down, each in
// chunks that are a row slice of ONE job, so every chunk streams one long
// contiguous run of weights (at decode a whole expert's gate+up is one 2 MB
// run: stream start-up per chunk, not arithmetic, is what small chunks cost);
// jobs with many tokens are cut into more slices so the threads stay busy.
// Chunks write disjoint per-job scratch. (3) the weighted combine into
// `out`, by token, adding each token's experts in job order, so the result
// does not depend on the thread count.
//
// Not thread-safe (it owns scratch buffers that only grow).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/inference/activations.h"
#include "common/inference/expert_engine.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe::backend {

class CpuExpertEngine final : public ExpertEngine {
 public:
  // Computes on `pool`, which must outlive the engine.
  CpuExpertEngine(ThreadPool& pool, ComputePrecision precision);
  // Computes on a pool of its own (an expert service worker's).
  CpuExpertEngine(std::unique_ptr<ThreadPool> pool, ComputePrecision precision);

  ComputePrecision precision() const override { return precision_; }
  std::string describe() const override;
  void begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
             float* out) override;
  void finish() override {}

 private:
  struct Slice {
    int32_t job;
    int64_t row_begin;
    int64_t row_end;
  };
  void plan_slices(std::span<const ExpertJob> jobs, bool down, std::vector<Slice>* slices) const;
  // hidden_q_: each job's SwiGLU rows quantized for its block-format down
  // projection (bf16 mode); hidden_q_offsets_[j] = -1 where none is needed.
  void quantize_hidden(const kernels::CpuKernels& k, std::span<const ExpertJob> jobs);

  std::unique_ptr<ThreadPool> owned_pool_;  // set by the owning constructor
  ThreadPool& pool_;
  ComputePrecision precision_;
  ActivationBuffer gathered_;  // [rows, hidden]: x rows of every job, job after job
  // Per job j, n_j rows of its own intermediate width, starting at inter_offsets_[j].
  std::vector<float> gate_;
  std::vector<float> up_;
  std::vector<float> hidden_f32_;
  std::vector<uint16_t> hidden_bf16_;
  std::vector<uint8_t> hidden_q_;
  std::vector<int64_t> hidden_q_offsets_;  // [job] byte offset into hidden_q_, or -1
  std::vector<float> down_;                // [rows, hidden]
  std::vector<int64_t> row_offsets_;       // first gathered row of each job
  std::vector<int64_t> inter_offsets_;     // first element of each job in gate_/up_/hidden_
  std::vector<Slice> slices_;
  // The combine, by token: token t adds entries [combine_start_[t], combine_start_[t+1]).
  std::vector<int64_t> combine_start_;
  std::vector<std::pair<int64_t, float>> combine_;  // (row of down_, weight)
  std::vector<int64_t> cursor_;                     // per token, while filling combine_
};

}  // namespace dancemoe::backend
