// Activations: a row-major [n_tokens, width] f32 matrix plus, in bf16
// compute mode, its bf16-rounded copy and its quantized copies (one per
// layout of kernels/quant_format.h that the weights it meets need), so that
// a matrix product can pick the kernel its weights and the precision call
// for:
//   bf16 weights, bf16 mode          -> matmul_bf16
//   block-format weights, bf16 mode  -> kernels::matmul_quantized (integer
//                                       kernel at decode, dequantize + GEMM
//                                       at prefill), or always the integer
//                                       kernel with kExactWeights
//   anything in f32 mode             -> matmul_f32 (exact w.r.t. the
//                                       weights: the reference)
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "common/inference/compute_precision.h"
#include "kernels/kernels.h"
#include "kernels/quant_format.h"

namespace dancemoe {

struct ActivationsView {
  const float* f32 = nullptr;      // [n_tokens, width]
  const uint16_t* bf16 = nullptr;  // [n_tokens, width] or null
  // Per quantized layout: [n_tokens] rows of quantized_row_bytes[i], or null.
  std::array<const uint8_t*, kernels::kQuantizedXLayouts> quantized{};
  std::array<int64_t, kernels::kQuantizedXLayouts> quantized_row_bytes{};

  // The same activations from row `first` on (rows of `width` values).
  ActivationsView rows_from(int64_t first, int64_t width) const {
    ActivationsView v = *this;
    v.f32 = f32 + first * width;
    if (bf16 != nullptr) v.bf16 = bf16 + first * width;
    for (int i = 0; i < kernels::kQuantizedXLayouts; ++i) {
      if (quantized[i] != nullptr) v.quantized[i] = quantized[i] + first * quantized_row_bytes[i];
    }
    return v;
  }
};

// Which prefill path block-format weights may take in bf16 mode:
// kFastest lets matmul_quantized pick (it rounds W to bf16 on its GEMM
// path); kExactWeights keeps the integer kernels, which use W exactly. The
// K and V projections ask for the latter: what they write stays in the KV
// cache and meets every later token. (bench_quant_logits, Q8_0 vs bf16:
// greedy steps equal 60, 58, 61 of 64 -> 60, 60, 61 with K and V exact,
// mean KL on the third prompt 3.7e-4 -> 3.0e-4.)
enum class WeightPath { kFastest, kExactWeights };

// y[t, row_begin..row_end) = x[t] W^T for t < n_tokens; see kernels::MatmulArgs.
inline void matmul_rows(const kernels::CpuKernels& k, const kernels::WeightView& w,
                        ActivationsView x, int64_t n_tokens, float* y, int64_t y_stride,
                        int64_t row_begin, int64_t row_end,
                        WeightPath path = WeightPath::kFastest) {
  if (row_begin >= row_end || n_tokens == 0) return;
  kernels::MatmulArgs args{w, n_tokens, y, y_stride, row_begin, row_end};
  if (kernels::is_block_format(w.type)) {
    const uint8_t* q = x.quantized[kernels::quantized_x_layout(w.type)];
    if (q != nullptr) {
      const uint16_t* bf16 = path == WeightPath::kExactWeights ? nullptr : x.bf16;
      kernels::matmul_quantized(k, args, kernels::QuantizedInput{q, bf16});
      return;
    }
  } else if (x.bf16 != nullptr && w.type == kernels::WeightType::kBF16) {
    k.matmul_bf16(args, x.bf16);
    return;
  }
  k.matmul_f32(args, x.f32);
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
    quantized_valid_.fill(false);
  }
  float* f32() { return f32_.data(); }
  uint16_t* bf16() { return use_bf16_ ? bf16_.data() : nullptr; }
  float* row(int64_t t) { return f32_.data() + t * width_; }
  ActivationsView view() const {
    ActivationsView v{f32_.data(), use_bf16_ ? bf16_.data() : nullptr, {}, {}};
    for (int i = 0; i < kernels::kQuantizedXLayouts; ++i) {
      if (!quantized_valid_[static_cast<size_t>(i)]) continue;
      v.quantized[static_cast<size_t>(i)] = quantized_[static_cast<size_t>(i)].data();
      v.quantized_row_bytes[static_cast<size_t>(i)] = quantized_row_bytes_[static_cast<size_t>(i)];
    }
    return v;
  }
  // Refreshes the copies of rows [0, n_tokens) after the f32 rows changed:
  // the bf16 copy (bf16 mode), and in bf16 mode the quantized copies for
  // the block formats among `weights` (f32 mode computes block formats
  // exactly from x itself).
  void prepare(const kernels::CpuKernels& k, int64_t n_tokens,
               std::initializer_list<kernels::WeightType> weights = {}) {
    quantized_valid_.fill(false);
    if (!use_bf16_) return;
    k.f32_to_bf16(f32_.data(), n_tokens * width_, bf16_.data());
    for (kernels::WeightType type : weights) quantize_for(k, type, n_tokens);
  }
  // Adds the quantized copy for weights of `type` (after prepare).
  void quantize_for(const kernels::CpuKernels& k, kernels::WeightType type, int64_t n_tokens) {
    if (!use_bf16_ || !kernels::is_block_format(type)) return;
    const size_t layout = static_cast<size_t>(kernels::quantized_x_layout(type));
    if (quantized_valid_[layout]) return;
    const int64_t row_bytes = kernels::quantized_x_row_bytes(type, width_);
    const size_t need = static_cast<size_t>(n_tokens * row_bytes);
    if (quantized_[layout].size() < need) quantized_[layout].resize(need);
    k.quantize_x(type, f32_.data(), n_tokens, width_, quantized_[layout].data());
    quantized_row_bytes_[layout] = row_bytes;
    quantized_valid_[layout] = true;
  }

 private:
  std::vector<float> f32_;
  std::vector<uint16_t> bf16_;
  std::array<std::vector<uint8_t>, kernels::kQuantizedXLayouts> quantized_;
  std::array<int64_t, kernels::kQuantizedXLayouts> quantized_row_bytes_{};
  std::array<bool, kernels::kQuantizedXLayouts> quantized_valid_{};
  int64_t width_ = 0;
  bool use_bf16_ = false;
};

}  // namespace dancemoe
