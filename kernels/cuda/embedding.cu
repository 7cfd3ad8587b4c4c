#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/embedding.cuh"

namespace dancemoe::kernels::cuda {
namespace {

__global__ void embedding_kernel(const uint16_t* table, int64_t hidden, const int32_t* ids,
                                 float* out) {
  const int64_t t = blockIdx.x;
  const uint16_t* row = table + static_cast<int64_t>(ids[t]) * hidden;
  float* dst = out + t * hidden;
  for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) dst[c] = bf16_bits_to_float(row[c]);
}

}  // namespace

void embedding(const uint16_t* table, int64_t hidden, const int32_t* ids, int64_t n_tokens,
               float* out, Stream stream) {
  if (n_tokens == 0) return;
  embedding_kernel<<<static_cast<unsigned>(n_tokens), 256, 0, stream>>>(table, hidden, ids, out);
}

}  // namespace dancemoe::kernels::cuda
