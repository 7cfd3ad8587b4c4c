#include "common/backend/cpu/cpu_expert_engine.h"

#include <algorithm>
#include <cstring>

#include "kernels/quant_format.h"

namespace dancemoe::backend {
namespace {

// A slice carries at least this many (token x row) products before a job is
// cut further: one token's whole expert at decode, finer slices at prefill.
constexpr int64_t kTokenRowsPerSlice = 8 * 512;
// Jobs of at most this many tokens are computed whole by one thread when
// there are enough of them (the decode split in the header).
constexpr int64_t kDecodeTokensPerJob = 4;
// A slice of an interleaved bf16 matrix has at least this many rows: its
// kernel transposes the call's activations into pairs once per call, so
// slices of one or two 16-row groups spent a fifth of a medium bf16
// prefill doing so (`dancemoe bench --prompt-tokens 512`: 0.85x the rows
// layout, 1.0-1.08x with this). The quantized kernels gain nothing from it.
constexpr int64_t kBf16InterleavedSliceRows = 128;

}  // namespace

CpuExpertEngine::CpuExpertEngine(ThreadPool& pool, ComputePrecision precision)
    : pool_(pool), precision_(precision) {}

CpuExpertEngine::CpuExpertEngine(std::unique_ptr<ThreadPool> pool, ComputePrecision precision)
    : owned_pool_(std::move(pool)), pool_(*owned_pool_), precision_(precision) {}

std::string CpuExpertEngine::describe() const {
  return "cpu (" + std::string(kernels::cpu_level_name(kernels::cpu_kernels().level)) + ", " +
         std::to_string(pool_.size()) + " threads)";
}

void CpuExpertEngine::plan_slices(std::span<const ExpertJob> jobs, bool down,
                                  std::vector<Slice>* slices) const {
  slices->clear();
  int64_t n_jobs = 0;
  for (const ExpertJob& job : jobs) n_jobs += job.tokens.empty() ? 0 : 1;
  if (n_jobs == 0) return;
  // With few jobs (a dense layer, a top-1 model) cut each so that every
  // thread still gets two slices.
  const int64_t min_slices_per_job = (2 * pool_.size() + n_jobs - 1) / n_jobs;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const int64_t n = static_cast<int64_t>(jobs[j].tokens.size());
    if (n == 0) continue;
    const int64_t rows = down ? jobs[j].down.rows : jobs[j].gate.rows;
    const int64_t by_work = (n * rows + kTokenRowsPerSlice - 1) / kTokenRowsPerSlice;
    const kernels::WeightView& w = down ? jobs[j].down : jobs[j].gate;
    const bool bf16_interleaved =
        w.type == kernels::WeightType::kBF16 && w.layout == kernels::WeightLayout::kInterleaved16;
    const int64_t min_rows =
        bf16_interleaved ? kBf16InterleavedSliceRows : kernels::kMatmulRowAlign;
    const int64_t max_slices = std::max<int64_t>(1, rows / min_rows);
    const int64_t n_slices = std::min(max_slices, std::max(by_work, min_slices_per_job));
    for (int64_t s = 0; s < n_slices; ++s) {
      const Range r = split_range(rows, s, n_slices, kernels::kMatmulRowAlign);
      if (r.begin < r.end) slices->push_back({static_cast<int32_t>(j), r.begin, r.end});
    }
  }
}

bool CpuExpertEngine::split_by_job(std::span<const ExpertJob> jobs) const {
  int64_t n_jobs = 0;
  for (const ExpertJob& job : jobs) {
    if (static_cast<int64_t>(job.tokens.size()) > kDecodeTokensPerJob) return false;
    n_jobs += job.tokens.empty() ? 0 : 1;
  }
  return n_jobs >= 2 * static_cast<int64_t>(pool_.size());
}

void CpuExpertEngine::plan_hidden_q(std::span<const ExpertJob> jobs) {
  hidden_q_offsets_.assign(jobs.size(), -1);
  if (precision_ != ComputePrecision::kBF16) return;
  int64_t bytes = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ExpertJob& job = jobs[j];
    if (job.tokens.empty() || !kernels::is_block_format(job.down.type)) continue;
    hidden_q_offsets_[j] = bytes;
    bytes += static_cast<int64_t>(job.tokens.size()) *
             kernels::quantized_x_row_bytes(job.down.type, job.down.cols);
  }
  if (hidden_q_.size() < static_cast<size_t>(bytes)) hidden_q_.resize(static_cast<size_t>(bytes));
}

void CpuExpertEngine::quantize_hidden_rows(const kernels::CpuKernels& k, const ExpertJob& job,
                                           size_t j) {
  const int64_t at = hidden_q_offsets_[j];
  if (at < 0) return;
  k.quantize_x(job.down.type, hidden_f32_.data() + inter_offsets_[j],
               static_cast<int64_t>(job.tokens.size()), job.down.cols, hidden_q_.data() + at);
}

void CpuExpertEngine::gate_up_rows(const kernels::CpuKernels& k, const ExpertJob& job, size_t j,
                                   const ActivationsView& x, int64_t hidden, int64_t r0,
                                   int64_t r1) {
  const bool bf16 = precision_ == ComputePrecision::kBF16;
  const int64_t n = static_cast<int64_t>(job.tokens.size());
  const int64_t inter = job.gate.rows;
  const int64_t off = inter_offsets_[j];
  const ActivationsView xj = x.rows_from(row_offsets_[j], hidden);
  matmul_rows(k, job.gate, xj, n, gate_.data() + off, inter, r0, r1);
  matmul_rows(k, job.up, xj, n, up_.data() + off, inter, r0, r1);
  const int64_t width = r1 - r0;
  const ExpertFfn& ffn = job.ffn;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t at = off + t * inter + r0;
    // The biases join before the activation (gpt-oss adds them to gate_up).
    if (ffn.gate_bias != nullptr) k.axpy(1.0f, ffn.gate_bias + r0, gate_.data() + at, width);
    if (ffn.up_bias != nullptr) k.axpy(1.0f, ffn.up_bias + r0, up_.data() + at, width);
    if (ffn.clamped) {
      k.swiglu_clamped(gate_.data() + at, up_.data() + at, width, ffn.alpha, ffn.limit,
                       hidden_f32_.data() + at);
    } else {
      k.swiglu(gate_.data() + at, up_.data() + at, width, hidden_f32_.data() + at);
    }
    if (bf16) k.f32_to_bf16(hidden_f32_.data() + at, width, hidden_bf16_.data() + at);
  }
}

void CpuExpertEngine::down_rows(const kernels::CpuKernels& k, const ExpertJob& job, size_t j,
                                int64_t hidden, int64_t r0, int64_t r1) {
  const bool bf16 = precision_ == ComputePrecision::kBF16;
  const int64_t off = inter_offsets_[j];
  ActivationsView hj{hidden_f32_.data() + off, bf16 ? hidden_bf16_.data() + off : nullptr, {}, {}};
  if (hidden_q_offsets_[j] >= 0) {
    const auto layout = static_cast<size_t>(kernels::quantized_x_layout(job.down.type));
    hj.quantized[layout] = hidden_q_.data() + hidden_q_offsets_[j];
    hj.quantized_row_bytes[layout] = kernels::quantized_x_row_bytes(job.down.type, job.down.cols);
  }
  const auto n = static_cast<int64_t>(job.tokens.size());
  float* out = down_.data() + row_offsets_[j] * hidden;
  matmul_rows(k, job.down, hj, n, out, hidden, r0, r1);
  if (job.ffn.down_bias != nullptr) {
    for (int64_t t = 0; t < n; ++t)
      k.axpy(1.0f, job.ffn.down_bias + r0, out + t * hidden + r0, r1 - r0);
  }
}

void CpuExpertEngine::begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens,
                            int64_t hidden, float* out) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const bool bf16 = precision_ == ComputePrecision::kBF16;
  int64_t rows = 0;
  int64_t inter_elements = 0;
  row_offsets_.clear();
  inter_offsets_.clear();
  for (const ExpertJob& job : jobs) {
    row_offsets_.push_back(rows);
    inter_offsets_.push_back(inter_elements);
    rows += static_cast<int64_t>(job.tokens.size());
    inter_elements += static_cast<int64_t>(job.tokens.size()) * job.gate.rows;
  }
  if (rows == 0) return;

  gathered_.resize(rows, hidden, precision_);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (size_t i = 0; i < jobs[j].tokens.size(); ++i) {
      std::memcpy(gathered_.row(row_offsets_[j] + static_cast<int64_t>(i)),
                  x + jobs[j].tokens[i] * hidden, static_cast<size_t>(hidden) * sizeof(float));
    }
  }
  gathered_.prepare(k, rows);
  for (const ExpertJob& job : jobs) {
    if (job.tokens.empty()) continue;
    gathered_.quantize_for(k, job.gate.type, rows);
    gathered_.quantize_for(k, job.up.type, rows);
  }
  const size_t n_inter = static_cast<size_t>(inter_elements);
  if (gate_.size() < n_inter) {
    gate_.resize(n_inter);
    up_.resize(n_inter);
    hidden_f32_.resize(n_inter);
  }
  if (bf16 && hidden_bf16_.size() < n_inter) hidden_bf16_.resize(n_inter);
  if (down_.size() < static_cast<size_t>(rows * hidden))
    down_.resize(static_cast<size_t>(rows * hidden));
  plan_hidden_q(jobs);
  const ActivationsView xg = gathered_.view();

  if (split_by_job(jobs)) {
    pool_.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t s, int) {
      const size_t j = static_cast<size_t>(s);
      const ExpertJob& job = jobs[j];
      if (job.tokens.empty()) return;
      gate_up_rows(k, job, j, xg, hidden, 0, job.gate.rows);
      quantize_hidden_rows(k, job, j);
      down_rows(k, job, j, hidden, 0, job.down.rows);
    });
  } else {
    // (1) gate, up, SwiGLU.
    plan_slices(jobs, /*down=*/false, &slices_);
    pool_.parallel_for(static_cast<int64_t>(slices_.size()), [&](int64_t s, int) {
      const Slice& slice = slices_[static_cast<size_t>(s)];
      const size_t j = static_cast<size_t>(slice.job);
      gate_up_rows(k, jobs[j], j, xg, hidden, slice.row_begin, slice.row_end);
    });
    // The SwiGLU outputs quantized for block-format down projections (bf16
    // mode); a pass (and its barrier) only when some down projection is one.
    if (std::any_of(hidden_q_offsets_.begin(), hidden_q_offsets_.end(),
                    [](int64_t at) { return at >= 0; })) {
      pool_.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        quantize_hidden_rows(k, jobs[static_cast<size_t>(j)], static_cast<size_t>(j));
      });
    }
    // (2) down, into per-job rows of down_.
    plan_slices(jobs, /*down=*/true, &slices_);
    pool_.parallel_for(static_cast<int64_t>(slices_.size()), [&](int64_t s, int) {
      const Slice& slice = slices_[static_cast<size_t>(s)];
      const size_t j = static_cast<size_t>(slice.job);
      down_rows(k, jobs[j], j, hidden, slice.row_begin, slice.row_end);
    });
  }

  // (3) out[t] += w * down row, per token, experts in job order.
  combine_start_.assign(static_cast<size_t>(n_tokens) + 1, 0);
  for (const ExpertJob& job : jobs) {
    for (int32_t t : job.tokens) ++combine_start_[static_cast<size_t>(t) + 1];
  }
  for (int64_t t = 0; t < n_tokens; ++t) {
    combine_start_[static_cast<size_t>(t) + 1] += combine_start_[static_cast<size_t>(t)];
  }
  combine_.resize(static_cast<size_t>(rows));
  cursor_.assign(combine_start_.begin(), combine_start_.end() - 1);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (size_t i = 0; i < jobs[j].tokens.size(); ++i) {
      const size_t t = static_cast<size_t>(jobs[j].tokens[i]);
      combine_[static_cast<size_t>(cursor_[t]++)] = {row_offsets_[j] + static_cast<int64_t>(i),
                                                     jobs[j].weights[i]};
    }
  }
  auto combine_tokens = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      for (int64_t e = combine_start_[static_cast<size_t>(t)];
           e < combine_start_[static_cast<size_t>(t) + 1]; ++e) {
        const auto& [row, weight] = combine_[static_cast<size_t>(e)];
        k.axpy(weight, down_.data() + row * hidden, out + t * hidden, hidden);
      }
    }
  };
  if (n_tokens < 16) {
    combine_tokens(0, n_tokens);
  } else {
    const int64_t n_chunks = chunk_count(n_tokens, 8, pool_.size());
    pool_.parallel_for(n_chunks, [&](int64_t c, int) {
      const Range r = split_range(n_tokens, c, n_chunks);
      combine_tokens(r.begin, r.end);
    });
  }
}

}  // namespace dancemoe::backend
