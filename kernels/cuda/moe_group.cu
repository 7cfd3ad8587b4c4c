#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/moe_group.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kThreads = 1024;

__global__ void group_kernel(GroupArgs a) {
  extern __shared__ int32_t counts[];  // [n_groups], then the cursors [n_groups]
  int32_t* cursor = counts + a.n_groups;
  for (int64_t g = threadIdx.x; g < a.n_groups; g += blockDim.x) counts[g] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < a.n_pairs; i += blockDim.x) {
    atomicAdd(&counts[a.ids ? a.ids[i] : 0], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // Serial scan and tile list: n_groups is at most a few hundred.
    int32_t offset = 0;
    for (int64_t g = 0; g < a.n_groups; ++g) {
      a.group_offsets[g] = offset;
      cursor[g] = offset;
      offset += counts[g];
    }
    a.group_offsets[a.n_groups] = offset;
    a.n_tiles[0] = write_expert_tiles(a.group_offsets, a.n_groups, a.tile_group, a.tile_row0);
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < a.n_pairs; i += blockDim.x) {
    const int32_t g = a.ids ? a.ids[i] : 0;
    const int32_t pos = atomicAdd(&cursor[g], 1);
    a.pair_token[pos] = static_cast<int32_t>(i / a.top_k);
    a.pair_weight[pos] = a.weights ? a.weights[i] : 1.0f;
    a.pair_group[pos] = g;
    a.pair_pos[i] = pos;
  }
}

}  // namespace

void group_pairs(const GroupArgs& args, Stream stream) {
  const size_t smem = sizeof(int32_t) * 2 * static_cast<size_t>(args.n_groups);
  group_kernel<<<1, kThreads, smem, stream>>>(args);
}

}  // namespace dancemoe::kernels::cuda
