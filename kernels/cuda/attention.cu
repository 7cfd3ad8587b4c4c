#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/device_util.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kDims = kMaxHeadDim / kWarp;  // head dims per lane, at most
constexpr int kDecodeWarps = 4;
constexpr int kPrefillWarps = 8;  // query tokens per block
constexpr int kTile = 32;         // positions per step (one per lane)

// Running softmax state of one warp for one query: lane l owns the output
// dims l, l + 32, ...
struct Online {
  float m = -INFINITY;  // running max of the scores
  float l = 0.0f;       // running sum of exp(s - m)
  float acc[kDims];
};

// Folds one tile of up to 32 positions into the state. `score` is this
// lane's score (position base + lane), -inf when masked; `v_row(j)` returns
// the value row of tile position j.
template <class VRow>
__device__ __forceinline__ void online_step(Online& st, float score, int n_valid, int64_t head_dim,
                                            VRow v_row) {
  const int lane = threadIdx.x % kWarp;
  const float tile_max = warp_max(score);
  const float m_new = fmaxf(st.m, tile_max);
  const float rescale = expf(st.m - m_new);  // 0 on the first tile (m = -inf)
  const float p = score == -INFINITY ? 0.0f : expf(score - m_new);
  st.l = st.l * rescale + warp_sum(p);
#pragma unroll
  for (int i = 0; i < kDims; ++i) st.acc[i] *= rescale;
  for (int j = 0; j < n_valid; ++j) {
    const float pj = __shfl_sync(0xffffffffu, p, j);
    const float* v = v_row(j);
#pragma unroll
    for (int i = 0; i < kDims; ++i) {
      const int64_t dim = lane + i * kWarp;
      if (dim < head_dim) st.acc[i] = fmaf(pj, v[dim], st.acc[i]);
    }
  }
  st.m = m_new;
}

// kSplit false: one block per (head, token) over all its positions, writing
// the output. true (flash-decoding): block z of gridDim.z takes its share of
// the positions, whole tiles, and writes its partial softmax state -- the
// max m, l = sum exp(s - m), acc = sum exp(s - m) v -- to a.partials for
// attention_decode_combine_kernel: one block per head streamed a long cache
// through 16 of an H200's 132 multiprocessors (220 tokens/s at a 1024-token
// context on the medium preset).
template <bool kSplit>
__global__ void attention_decode_kernel(AttentionArgs a) {
  extern __shared__ float smem[];
  float* q_s = smem;                  // [head_dim]
  float* m_s = q_s + a.head_dim;      // [warps]
  float* l_s = m_s + kDecodeWarps;    // [warps]
  float* acc_s = l_s + kDecodeWarps;  // [warps, head_dim]
  const int64_t h = blockIdx.x;
  const int64_t t = blockIdx.y;
  const int warp = threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  const int64_t d = a.head_dim;
  const int64_t kv_off = (h / (a.n_heads / a.n_kv_heads)) * d;
  const int64_t n_ctx = *a.d_pos0 + t + 1;
  const int64_t first = a.window > 0 ? max64(0, n_ctx - a.window) : 0;
  int64_t begin = first, end = n_ctx;
  if constexpr (kSplit) {
    const int64_t share = ceil_div(ceil_div(n_ctx - first, gridDim.z), kTile) * kTile;
    begin = min64(n_ctx, first + static_cast<int64_t>(blockIdx.z) * share);
    end = min64(n_ctx, begin + share);
  }
  const float* q = a.q + t * a.q_stride + h * d;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) q_s[i] = q[i] * a.scale;
  __syncthreads();

  Online st;
#pragma unroll
  for (int i = 0; i < kDims; ++i) st.acc[i] = 0.0f;
  for (int64_t base = begin + static_cast<int64_t>(warp) * kTile; base < end;
       base += kDecodeWarps * kTile) {
    const int64_t j = base + lane;
    float score = -INFINITY;
    if (j < end) {
      const float* k = a.k_cache + j * a.kv_stride + kv_off;
      float s = 0.0f;
      for (int64_t i = 0; i < d; ++i) s = fmaf(q_s[i], k[i], s);
      score = s;
    }
    const int n_valid = static_cast<int>(min64(kTile, end - base));
    online_step(st, score, n_valid, d,
                [&](int jj) { return a.v_cache + (base + jj) * a.kv_stride + kv_off; });
  }
  if (lane == 0) {
    m_s[warp] = st.m;
    l_s[warp] = st.l;
  }
#pragma unroll
  for (int i = 0; i < kDims; ++i) {
    const int64_t dim = lane + i * kWarp;
    if (dim < d) acc_s[warp * d + dim] = st.acc[i];
  }
  __syncthreads();
  if constexpr (kSplit) {
    float m = -INFINITY;
    for (int w = 0; w < kDecodeWarps; ++w) m = fmaxf(m, m_s[w]);
    // A warp (or the whole share) without positions has m = -inf: weight 0.
    const auto weight = [&](int w) { return m_s[w] == -INFINITY ? 0.0f : expf(m_s[w] - m); };
    float* p = a.partials + ((t * a.n_heads + h) * gridDim.z + blockIdx.z) * (d + 2);
    if (threadIdx.x == 0) {
      float l = 0.0f;
      for (int w = 0; w < kDecodeWarps; ++w) l += l_s[w] * weight(w);
      p[0] = m;
      p[1] = l;
    }
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      float o = 0.0f;
      for (int w = 0; w < kDecodeWarps; ++w) o += acc_s[w * d + i] * weight(w);
      p[2 + i] = o;
    }
    return;
  }
  const float sink = a.sinks ? a.sinks[h] : -INFINITY;
  float m = sink;
  for (int w = 0; w < kDecodeWarps; ++w) m = fmaxf(m, m_s[w]);
  float l = a.sinks ? expf(sink - m) : 0.0f;
  for (int w = 0; w < kDecodeWarps; ++w) l += l_s[w] * expf(m_s[w] - m);
  const float inv_l = 1.0f / l;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float o = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w) o += acc_s[w * d + i] * expf(m_s[w] - m);
    o *= inv_l;
    a.out[t * a.out_stride + h * d + i] = o;
    if (a.out_bf16) a.out_bf16[t * a.out_stride + h * d + i] = float_to_bf16_bits(o);
  }
}

// The output of one (head, token) from its n_splits partial states (in
// split order), the sink joining the softmax as in the one-block kernel.
__global__ void attention_decode_combine_kernel(AttentionArgs a, int n_splits) {
  __shared__ float weight_s[kDecodeSplits];
  __shared__ float inv_l_s;
  const int64_t h = blockIdx.x;
  const int64_t t = blockIdx.y;
  const int64_t d = a.head_dim;
  const int64_t row = d + 2;
  const float* p = a.partials + (t * a.n_heads + h) * n_splits * row;
  if (threadIdx.x == 0) {
    const float sink = a.sinks ? a.sinks[h] : -INFINITY;
    float m = sink;
    for (int s = 0; s < n_splits; ++s) m = fmaxf(m, p[s * row]);
    float l = a.sinks ? expf(sink - m) : 0.0f;
    for (int s = 0; s < n_splits; ++s) {
      const float ms = p[s * row];
      weight_s[s] = ms == -INFINITY ? 0.0f : expf(ms - m);
      l += p[s * row + 1] * weight_s[s];
    }
    inv_l_s = 1.0f / l;
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < n_splits; ++s) o += p[s * row + 2 + i] * weight_s[s];
    o *= inv_l_s;
    a.out[t * a.out_stride + h * d + i] = o;
    if (a.out_bf16) a.out_bf16[t * a.out_stride + h * d + i] = float_to_bf16_bits(o);
  }
}

__global__ void attention_prefill_kernel(AttentionArgs a) {
  extern __shared__ float smem[];
  const int64_t d = a.head_dim;
  const int64_t k_stride_s = d + 1;       // padding: lane j reads row j, no bank conflicts
  float* k_s = smem;                      // [kTile, d + 1]
  float* v_s = k_s + kTile * k_stride_s;  // [kTile, d]
  float* q_s = v_s + kTile * d;           // [warps, d]
  const int64_t h = blockIdx.x;
  const int warp = threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kPrefillWarps;
  const int64_t t = t0 + warp;
  const bool active = t < a.n_tokens;
  const int64_t kv_off = (h / (a.n_heads / a.n_kv_heads)) * d;
  const int64_t pos0 = *a.d_pos0;
  const int64_t n_ctx = pos0 + t + 1;  // this warp's query
  const int64_t first = a.window > 0 ? max64(0, n_ctx - a.window) : 0;
  const int64_t last_t = min64(t0 + kPrefillWarps, a.n_tokens) - 1;
  const int64_t block_ctx = pos0 + last_t + 1;
  // The block's first needed position: its first query's window start.
  const int64_t block_first = a.window > 0 ? max64(0, pos0 + t0 + 1 - a.window) : 0;
  float* qw = q_s + warp * d;
  if (active) {
    const float* q = a.q + t * a.q_stride + h * d;
    for (int64_t i = lane; i < d; i += kWarp) qw[i] = q[i] * a.scale;
  }
  Online st;
#pragma unroll
  for (int i = 0; i < kDims; ++i) st.acc[i] = 0.0f;
  for (int64_t base = block_first; base < block_ctx; base += kTile) {
    const int64_t n_rows = min64(kTile, block_ctx - base);
    __syncthreads();  // previous tile fully consumed (and q_s written on the first pass)
    for (int64_t e = threadIdx.x; e < n_rows * d; e += blockDim.x) {
      const int64_t r = e / d;
      const int64_t c = e % d;
      k_s[r * k_stride_s + c] = a.k_cache[(base + r) * a.kv_stride + kv_off + c];
      v_s[r * d + c] = a.v_cache[(base + r) * a.kv_stride + kv_off + c];
    }
    __syncthreads();
    // Warp-uniform; a tile wholly before the window is skipped, so the first
    // tile folded in has a valid position (online_step needs one).
    if (!active || base >= n_ctx || base + kTile <= first) continue;
    const int64_t j = base + lane;
    float score = -INFINITY;
    if (j < n_ctx && j >= first) {
      const float* k = k_s + lane * k_stride_s;
      float s = 0.0f;
      for (int64_t i = 0; i < d; ++i) s = fmaf(qw[i], k[i], s);
      score = s;
    }
    const int n_valid = static_cast<int>(min64(kTile, n_ctx - base));
    online_step(st, score, n_valid, d, [&](int jj) { return v_s + jj * d; });
  }
  if (!active) return;
  float rescale = 1.0f;  // the sink joins the softmax at the end
  float l = st.l;
  if (a.sinks) {
    const float m = fmaxf(st.m, a.sinks[h]);
    rescale = expf(st.m - m);
    l = st.l * rescale + expf(a.sinks[h] - m);
  }
  const float inv_l = rescale / l;
#pragma unroll
  for (int i = 0; i < kDims; ++i) {
    const int64_t dim = lane + i * kWarp;
    if (dim >= d) continue;
    const float o = st.acc[i] * inv_l;
    a.out[t * a.out_stride + h * d + dim] = o;
    if (a.out_bf16) a.out_bf16[t * a.out_stride + h * d + dim] = float_to_bf16_bits(o);
  }
}

}  // namespace

void attention_decode(const AttentionArgs& args, Stream stream) {
  if (args.n_tokens == 0) return;
  const size_t smem = sizeof(float) * static_cast<size_t>(args.head_dim + 2 * kDecodeWarps +
                                                          kDecodeWarps * args.head_dim);
  const dim3 grid(static_cast<unsigned>(args.n_heads), static_cast<unsigned>(args.n_tokens));
  if (args.partials == nullptr) {
    attention_decode_kernel<false><<<grid, kDecodeWarps * kWarp, smem, stream>>>(args);
    return;
  }
  const dim3 split_grid(grid.x, grid.y, kDecodeSplits);
  attention_decode_kernel<true><<<split_grid, kDecodeWarps * kWarp, smem, stream>>>(args);
  attention_decode_combine_kernel<<<grid, 128, 0, stream>>>(args, kDecodeSplits);
}

int64_t decode_partial_floats(int64_t n_tokens, int64_t n_heads, int64_t head_dim) {
  return n_tokens * n_heads * kDecodeSplits * (head_dim + 2);
}

void attention_prefill(const AttentionArgs& args, Stream stream) {
  if (args.n_tokens == 0) return;
  const int64_t d = args.head_dim;
  const size_t smem =
      sizeof(float) * static_cast<size_t>(kTile * (d + 1) + kTile * d + kPrefillWarps * d);
  if (smem > 48 * 1024) {
    cudaFuncSetAttribute(attention_prefill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(smem));
  }
  const dim3 grid(static_cast<unsigned>(args.n_heads),
                  static_cast<unsigned>(ceil_div(args.n_tokens, kPrefillWarps)));
  attention_prefill_kernel<<<grid, kPrefillWarps * kWarp, smem, stream>>>(args);
}

void attention(const AttentionArgs& args, Stream stream) {
  if (args.n_tokens <= 2) {
    attention_decode(args, stream);
  } else {
    attention_prefill(args, stream);
  }
}

}  // namespace dancemoe::kernels::cuda
