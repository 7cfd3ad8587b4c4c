// The work list of the grouped expert GEMM kernels (expert_ffn.cuh): the
// sorted (token, expert) pairs of each group (expert) are cut into tiles of
// kExpertTileRows pairs, one thread block per tile; a group's last tile may
// be partial, an empty group has none.
//
//   offsets:    [n_groups + 1] group g's sorted pairs are [offsets[g], offsets[g+1])
//   tile_group: [n_tiles] the group of each tile
//   tile_row0:  [n_tiles] its first sorted pair
//
// Plain C++ compiled for both sides: the grouping kernel (moe_group.cu)
// builds the list on the device with this code, the CUDA expert engine
// builds it on the host with it, and the host test
// (tests/kernels/cuda/moe_tiles_test.cpp) checks it on any machine.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DMOE_HOST_DEVICE __host__ __device__
#else
#define DMOE_HOST_DEVICE
#endif

namespace dancemoe::kernels::cuda {

constexpr int64_t kExpertTileRows = 64;  // == mma_tile.cuh kTileM

// Tiles of one group of n_pairs pairs.
DMOE_HOST_DEVICE inline int64_t expert_tiles_for(int64_t n_pairs) {
  return (n_pairs + kExpertTileRows - 1) / kExpertTileRows;
}

// An upper bound on the tiles of n_pairs pairs in n_groups groups, however
// they are distributed (each group wastes less than one tile): the size of
// the tile arrays and of the kernels' grid.
DMOE_HOST_DEVICE inline int64_t max_expert_tiles(int64_t n_pairs, int64_t n_groups) {
  return (n_pairs + kExpertTileRows - 1) / kExpertTileRows + n_groups;
}

// Writes the tile list of the groups that `offsets` describes; returns the
// number of tiles (at most max_expert_tiles(offsets[n_groups], n_groups)).
DMOE_HOST_DEVICE inline int32_t write_expert_tiles(const int32_t* offsets, int64_t n_groups,
                                                   int32_t* tile_group, int32_t* tile_row0) {
  int32_t n_tiles = 0;
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int32_t r = offsets[g]; r < offsets[g + 1]; r += static_cast<int32_t>(kExpertTileRows)) {
      tile_group[n_tiles] = static_cast<int32_t>(g);
      tile_row0[n_tiles] = r;
      ++n_tiles;
    }
  }
  return n_tiles;
}

}  // namespace dancemoe::kernels::cuda
