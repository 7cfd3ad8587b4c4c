// CpuExpertEngine: experts on the CPU kernels and a ThreadPool (the default
// ExpertEngine, common/inference/expert_engine.h). begin() does all the work;
// finish() has nothing left to do.
//
// Work split. Decode (every job has at most kDecodeTokensPerJob tokens and
// there are at least two jobs per thread): ONE pool call whose chunks are
// whole jobs -- gate, up, SwiGLU, the hidden rows' quantization and down of
// one expert in a row on one thread, so a MoE layer costs one barrier, not
// three, and each thread streams whole experts (a few MB of contiguous
// weights). Otherwise (prefill, a dense layer, few experts), three pool
// calls: (1) gate, up and SwiGLU, (2) down, each in chunks that are a row
// slice of ONE job, so every chunk streams one long contiguous run of
// weights; jobs with many tokens are cut into more slices so the threads
// stay busy. Either way chunks write disjoint per-job scratch and every
// output row is computed by the same kernel call on the same inputs, so the
// two splits give the same bits. Then the weighted combine into `out`, by
// token, adding each token's experts in job order, so the result does not
// depend on the thread count.
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
  // The decode split above applies (one chunk per job).
  bool split_by_job(std::span<const ExpertJob> jobs) const;
  void plan_slices(std::span<const ExpertJob> jobs, bool down, std::vector<Slice>* slices) const;
  // Rows [r0, r1) of job j's gate and up, then SwiGLU into hidden_f32_ (and
  // hidden_bf16_ in bf16 mode). x: the gathered rows of every job.
  void gate_up_rows(const kernels::CpuKernels& k, const ExpertJob& job, size_t j,
                    const ActivationsView& x, int64_t hidden, int64_t r0, int64_t r1);
  // hidden_q_: each job's SwiGLU rows quantized for its block-format down
  // projection (bf16 mode); hidden_q_offsets_[j] = -1 where none is needed.
  // plan_hidden_q sizes it, quantize_hidden_rows fills job j's part.
  void plan_hidden_q(std::span<const ExpertJob> jobs);
  void quantize_hidden_rows(const kernels::CpuKernels& k, const ExpertJob& job, size_t j);
  // Rows [r0, r1) of job j's down projection into its rows of down_.
  void down_rows(const kernels::CpuKernels& k, const ExpertJob& job, size_t j, int64_t hidden,
                 int64_t r0, int64_t r1);

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
