// Activations: a row-major [n_tokens, width] f32 matrix plus, in bf16
// compute mode, its bf16-rounded copy, so that a matrix product can pick the
// kernel its weights and the precision call for.
#pragma once

#include <cstdint>
#include <vector>

#include "common/inference/compute_precision.h"
#include "kernels/kernels.h"

namespace dancemoe {

struct ActivationsView {
  const float* f32 = nullptr;      // [n_tokens, width]
  const uint16_t* bf16 = nullptr;  // [n_tokens, width] or null
};

// y[t, row_begin..row_end) = x[t] W^T for t < n_tokens; see kernels::MatmulArgs.
inline void matmul_rows(const kernels::CpuKernels& k, const kernels::WeightView& w,
                        ActivationsView x, int64_t n_tokens, float* y, int64_t y_stride,
                        int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end || n_tokens == 0) return;
  kernels::MatmulArgs args{w, n_tokens, y, y_stride, row_begin, row_end};
  if (x.bf16 != nullptr && w.type == kernels::WeightType::kBF16) {
    k.matmul_bf16(args, x.bf16);
  } else {
    k.matmul_f32(args, x.f32);
  }
}

// Growable scratch for one activation matrix; never shrinks, so steady-state
// decoding allocates nothing.
class ActivationBuffer {
 public:
  void resize(int64_t n_tokens, int64_t width, ComputePrecision precision) {
    const size_t n = static_cast<size_t>(n_tokens * width);
    if (f32_.size() < n) f32_.resize(n);
    if (precision == ComputePrecision::kBF16 && bf16_.size() < n) bf16_.resize(n);
    width_ = width;
    use_bf16_ = precision == ComputePrecision::kBF16;
  }
  float* f32() { return f32_.data(); }
  uint16_t* bf16() { return use_bf16_ ? bf16_.data() : nullptr; }
  float* row(int64_t t) { return f32_.data() + t * width_; }
  ActivationsView view() const { return {f32_.data(), use_bf16_ ? bf16_.data() : nullptr}; }
  // Refreshes the bf16 copy of rows [0, n_tokens) (no-op in f32 mode).
  void round_to_bf16(const kernels::CpuKernels& k, int64_t n_tokens) {
    if (use_bf16_) k.f32_to_bf16(f32_.data(), n_tokens * width_, bf16_.data());
  }

 private:
  std::vector<float> f32_;
  std::vector<uint16_t> bf16_;
  int64_t width_ = 0;
  bool use_bf16_ = false;
};

}  // namespace dancemoe
