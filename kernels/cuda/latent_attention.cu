#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/latent_attention.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTokens = 8;   // query tokens sharing one read of a head's kv_b rows
constexpr int kChunk = 256;  // cached positions scored per step of the online softmax
constexpr int kValuesPerThread = static_cast<int>(kMaxLatentRank / kThreads);

// q_lat[t, h] = [W_UK[h]^T q_nope[t, h], q_pe[t, h]] for the block's tokens.
__global__ void absorb_q_kernel(LatentAttentionArgs a) {
  extern __shared__ float q_nope[];  // [kTokens, nope], 0 past the batch
  const int64_t h = blockIdx.x;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  const int64_t head_dim = a.nope + a.rope;
  const int64_t row = a.rank + a.rope;
  for (int64_t e = threadIdx.x; e < kTokens * a.nope; e += blockDim.x) {
    const int64_t t = t0 + e / a.nope;
    q_nope[e] = t < a.n_tokens ? a.q[t * a.q_stride + h * head_dim + e % a.nope] : 0.0f;
  }
  __syncthreads();
  const uint16_t* w_uk = a.kv_b + h * (a.nope + a.v_dim) * a.rank;
  for (int64_t c = threadIdx.x; c < a.rank; c += blockDim.x) {
    float acc[kTokens] = {};
    for (int64_t d = 0; d < a.nope; ++d) {
      const float w = bf16_bits_to_float(w_uk[d * a.rank + c]);
#pragma unroll
      for (int tt = 0; tt < kTokens; ++tt) acc[tt] = fmaf(q_nope[tt * a.nope + d], w, acc[tt]);
    }
#pragma unroll
    for (int tt = 0; tt < kTokens; ++tt) {
      const int64_t t = t0 + tt;
      if (t < a.n_tokens) a.q_lat[(t * a.n_heads + h) * row + c] = acc[tt];
    }
  }
  for (int64_t e = threadIdx.x; e < kTokens * a.rope; e += blockDim.x) {
    const int64_t t = t0 + e / a.rope;
    const int64_t i = e % a.rope;
    if (t < a.n_tokens) {
      a.q_lat[(t * a.n_heads + h) * row + a.rank + i] =
          a.q[t * a.q_stride + h * head_dim + a.nope + i];
    }
  }
}

// o_lat[t, h] = softmax(scale q_lat[t, h] . cache[j]) over j <= pos0 + t,
// applied to the cached rows' first rank columns.
__global__ void __launch_bounds__(kThreads) attend_kernel(LatentAttentionArgs a) {
  extern __shared__ float smem[];
  __shared__ float scratch[kWarp];
  const int64_t row = a.rank + a.rope;
  float* q_s = smem;        // [row] q_lat times the scale
  float* p_s = smem + row;  // [kChunk] scores, then their exponentials
  const int64_t h = blockIdx.x;
  const int64_t t = blockIdx.y;
  const int warp = threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  const int n_warps = blockDim.x / kWarp;
  const int64_t n_ctx = *a.d_pos0 + t + 1;
  const float* q = a.q_lat + (t * a.n_heads + h) * row;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) q_s[i] = q[i] * a.scale;
  __syncthreads();

  float m = -INFINITY;  // running max of the scores
  float l = 0.0f;       // running sum of exp(s - m)
  float acc[kValuesPerThread] = {};
  for (int64_t base = 0; base < n_ctx; base += kChunk) {
    const int64_t n_rows = min64(kChunk, n_ctx - base);
    for (int64_t j = warp; j < n_rows; j += n_warps) {
      const float* k = a.cache + (base + j) * row;
      float s = 0.0f;
      for (int64_t i = lane; i < row; i += kWarp) s = fmaf(q_s[i], k[i], s);
      s = warp_sum(s);
      if (lane == 0) p_s[j] = s;
    }
    __syncthreads();
    float local_max = -INFINITY;
    for (int64_t j = threadIdx.x; j < n_rows; j += blockDim.x) local_max = fmaxf(local_max, p_s[j]);
    const float m_new = fmaxf(m, block_max(local_max, scratch));
    const float rescale = expf(m - m_new);  // 0 on the first chunk (m = -inf)
    float local_sum = 0.0f;
    // Each thread rewrites the scores it read for the max; block_sum's
    // barriers then publish them to every thread.
    for (int64_t j = threadIdx.x; j < n_rows; j += blockDim.x) {
      const float e = expf(p_s[j] - m_new);
      p_s[j] = e;
      local_sum += e;
    }
    l = l * rescale + block_sum(local_sum, scratch);
#pragma unroll
    for (int k = 0; k < kValuesPerThread; ++k) {
      const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
      if (c >= a.rank) continue;
      float v = acc[k] * rescale;
      for (int64_t j = 0; j < n_rows; ++j) v = fmaf(p_s[j], a.cache[(base + j) * row + c], v);
      acc[k] = v;
    }
    m = m_new;
    __syncthreads();  // the next chunk rewrites p_s
  }
  const float inv_l = 1.0f / l;
#pragma unroll
  for (int k = 0; k < kValuesPerThread; ++k) {
    const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    if (c < a.rank) a.o_lat[(t * a.n_heads + h) * a.rank + c] = acc[k] * inv_l;
  }
}

// out[t, h] = W_UV[h] o_lat[t, h] for the block's tokens.
__global__ void absorb_out_kernel(LatentAttentionArgs a) {
  extern __shared__ float o_lat[];  // [kTokens, rank], 0 past the batch
  const int64_t h = blockIdx.x;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  const int warp = threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  const int n_warps = blockDim.x / kWarp;
  for (int64_t e = threadIdx.x; e < kTokens * a.rank; e += blockDim.x) {
    const int64_t t = t0 + e / a.rank;
    o_lat[e] = t < a.n_tokens ? a.o_lat[(t * a.n_heads + h) * a.rank + e % a.rank] : 0.0f;
  }
  __syncthreads();
  const uint16_t* w_uv = a.kv_b + (h * (a.nope + a.v_dim) + a.nope) * a.rank;
  for (int64_t v = warp; v < a.v_dim; v += n_warps) {
    const uint16_t* w = w_uv + v * a.rank;
    float acc[kTokens] = {};
    for (int64_t c = lane; c < a.rank; c += kWarp) {
      const float wv = bf16_bits_to_float(w[c]);
#pragma unroll
      for (int tt = 0; tt < kTokens; ++tt) acc[tt] = fmaf(wv, o_lat[tt * a.rank + c], acc[tt]);
    }
#pragma unroll
    for (int tt = 0; tt < kTokens; ++tt) acc[tt] = warp_sum(acc[tt]);
    if (lane != 0) continue;
#pragma unroll
    for (int tt = 0; tt < kTokens; ++tt) {
      const int64_t t = t0 + tt;
      if (t >= a.n_tokens) continue;
      const int64_t at = t * a.out_stride + h * a.v_dim + v;
      a.out[at] = acc[tt];
      if (a.out_bf16) a.out_bf16[at] = float_to_bf16_bits(acc[tt]);
    }
  }
}

}  // namespace

void latent_attention(const LatentAttentionArgs& args, Stream stream) {
  if (args.n_tokens == 0) return;
  const dim3 token_blocks(static_cast<unsigned>(args.n_heads),
                          static_cast<unsigned>(ceil_div(args.n_tokens, kTokens)));
  absorb_q_kernel<<<token_blocks, kThreads,
                    sizeof(float) * static_cast<size_t>(kTokens * args.nope), stream>>>(args);
  const dim3 per_token(static_cast<unsigned>(args.n_heads), static_cast<unsigned>(args.n_tokens));
  attend_kernel<<<per_token, kThreads,
                  sizeof(float) * static_cast<size_t>(args.rank + args.rope + kChunk), stream>>>(
      args);
  absorb_out_kernel<<<token_blocks, kThreads,
                      sizeof(float) * static_cast<size_t>(kTokens * args.rank), stream>>>(args);
}

}  // namespace dancemoe::kernels::cuda
