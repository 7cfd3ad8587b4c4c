// One query position against n_ctx cached positions, per query head h:
//   s[j]   = scale * q[h] . k[j, kvh]         kvh = h / (n_heads / n_kv_heads)
//   p      = softmax(s)                        (with a sink: softmax over [s, sink],
//                                               the sink's share dropped)
//   out[h] = sum_j p[j] v[j, kvh]
// q, out: [n_heads, head_dim]; k, v: [n_ctx, kv_stride], f32 or bf16 (k_bf16,
// v_bf16: each element widened to f32 as it is read); scratch: [n_ctx]
#include <cmath>

#include "kernels/cpu/numeric.h"
#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {
namespace {

inline float kv_value(float v) { return v; }
inline float kv_value(uint16_t v) { return bf16_to_float(v); }

// p[j] = exp(s[j]) / (sum_i exp(s[i]) + exp(sink)), in place.
void softmax_with_sink(float* s, int64_t n, float sink) {
  float max_s = sink;
  for (int64_t j = 0; j < n; ++j) max_s = s[j] > max_s ? s[j] : max_s;
  float sum = std::exp(sink - max_s);
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - max_s);
    sum += s[j];
  }
  for (int64_t j = 0; j < n; ++j) s[j] /= sum;
}

template <class E>
void attention_impl(const AttentionArgs& a, const E* k, const E* v) {
  const int64_t group = a.n_heads / a.n_kv_heads;
  for (int64_t h = a.head_begin; h < a.head_end; ++h) {
    const int64_t kv_offset = (h / group) * a.head_dim;
    const float* qh = a.q + h * a.head_dim;
    for (int64_t j = 0; j < a.n_ctx; ++j) {
      const E* kj = k + j * a.kv_stride + kv_offset;
      float sum = 0.0f;
      for (int64_t d = 0; d < a.head_dim; ++d) sum += qh[d] * kv_value(kj[d]);
      a.scratch[j] = a.scale * sum;
    }
    if (a.sinks == nullptr) {
      softmax(a.scratch, a.n_ctx);
    } else {
      softmax_with_sink(a.scratch, a.n_ctx, a.sinks[h]);
    }
    float* oh = a.out + h * a.head_dim;
    for (int64_t d = 0; d < a.head_dim; ++d) oh[d] = 0.0f;
    for (int64_t j = 0; j < a.n_ctx; ++j) {
      const E* vj = v + j * a.kv_stride + kv_offset;
      for (int64_t d = 0; d < a.head_dim; ++d) oh[d] += a.scratch[j] * kv_value(vj[d]);
    }
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  if (a.k_bf16 != nullptr) {
    attention_impl(a, a.k_bf16, a.v_bf16);
  } else {
    attention_impl(a, a.k, a.v);
  }
}

}  // namespace dancemoe::kernels::scalar
