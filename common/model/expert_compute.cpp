#include "common/model/expert_compute.h"

#include <algorithm>
#include <cstring>

namespace dancemoe {
namespace {

// Row slices are multiples of this so SIMD kernels rarely see ragged tails.
constexpr int64_t kRowAlign = 16;
// Rows of every job per chunk: at decode, 64 rows of 8 experts' gate and up
// projections are ~2 MB of weights, big enough to stream well and small
// enough to balance across threads.
constexpr int64_t kRowsPerChunk = 64;

}  // namespace

ExpertComputer::ExpertComputer(ThreadPool& pool, ComputePrecision precision)
    : pool_(pool), precision_(precision) {}

void ExpertComputer::run(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens,
                         int64_t hidden, float* out) {
  (void)n_tokens;
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  int64_t rows = 0;
  int64_t inter = 0;
  job_offsets_.clear();
  for (const ExpertJob& job : jobs) {
    job_offsets_.push_back(rows);
    rows += static_cast<int64_t>(job.tokens.size());
    inter = std::max(inter, job.gate.rows);
  }
  if (rows == 0) return;

  gathered_.resize(rows, hidden, precision_);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (size_t i = 0; i < jobs[j].tokens.size(); ++i) {
      std::memcpy(gathered_.row(job_offsets_[j] + static_cast<int64_t>(i)),
                  x + jobs[j].tokens[i] * hidden, static_cast<size_t>(hidden) * sizeof(float));
    }
  }
  gathered_.round_to_bf16(k, rows);
  hidden_.resize(rows, inter, precision_);
  if (gate_.size() < static_cast<size_t>(rows * inter)) {
    gate_.resize(static_cast<size_t>(rows * inter));
    up_.resize(static_cast<size_t>(rows * inter));
  }
  if (down_.size() < static_cast<size_t>(rows * hidden))
    down_.resize(static_cast<size_t>(rows * hidden));

  const ActivationsView xg = gathered_.view();
  const int n_threads = pool_.size();
  const int64_t n_inter_chunks = chunk_count(inter, kRowsPerChunk, n_threads);
  pool_.parallel_for(n_inter_chunks, [&](int64_t chunk, int) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      const ExpertJob& job = jobs[j];
      const int64_t n = static_cast<int64_t>(job.tokens.size());
      if (n == 0) continue;
      const int64_t off = job_offsets_[j];
      const Range r = split_range(job.gate.rows, chunk, n_inter_chunks, kRowAlign);
      if (r.begin >= r.end) continue;
      ActivationsView xj{xg.f32 + off * hidden, xg.bf16 ? xg.bf16 + off * hidden : nullptr};
      float* g = gate_.data() + off * inter;
      float* u = up_.data() + off * inter;
      matmul_rows(k, job.gate, xj, n, g, inter, r.begin, r.end);
      matmul_rows(k, job.up, xj, n, u, inter, r.begin, r.end);
      for (int64_t t = 0; t < n; ++t) {
        float* h = hidden_.row(off + t) + r.begin;
        k.swiglu(g + t * inter + r.begin, u + t * inter + r.begin, r.end - r.begin, h);
        if (uint16_t* hb = hidden_.bf16()) {
          k.f32_to_bf16(h, r.end - r.begin, hb + (off + t) * inter + r.begin);
        }
      }
    }
  });

  const ActivationsView hv = hidden_.view();
  const int64_t n_hidden_chunks = chunk_count(hidden, kRowsPerChunk, n_threads);
  pool_.parallel_for(n_hidden_chunks, [&](int64_t chunk, int) {
    const Range r = split_range(hidden, chunk, n_hidden_chunks, kRowAlign);
    if (r.begin >= r.end) return;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const ExpertJob& job = jobs[j];
      const int64_t n = static_cast<int64_t>(job.tokens.size());
      if (n == 0) continue;
      const int64_t off = job_offsets_[j];
      ActivationsView hj{hv.f32 + off * inter, hv.bf16 ? hv.bf16 + off * inter : nullptr};
      float* d = down_.data() + off * hidden;
      if (job.gate.rows == inter) {
        matmul_rows(k, job.down, hj, n, d, hidden, r.begin, r.end);
      } else {
        // A job with a smaller intermediate size (a dense layer mixed in)
        // has rows of `inter` stride in hidden_: one token at a time.
        for (int64_t t = 0; t < n; ++t) {
          ActivationsView row{hj.f32 + t * inter, hj.bf16 ? hj.bf16 + t * inter : nullptr};
          matmul_rows(k, job.down, row, 1, d + t * hidden, hidden, r.begin, r.end);
        }
      }
      for (int64_t t = 0; t < n; ++t) {
        k.axpy(job.weights[static_cast<size_t>(t)], d + t * hidden + r.begin,
               out + job.tokens[static_cast<size_t>(t)] * hidden + r.begin, r.end - r.begin);
      }
    }
  });
}

}  // namespace dancemoe
