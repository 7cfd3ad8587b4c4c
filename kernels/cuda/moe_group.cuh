// Grouping a layer's (token, expert) pairs by expert, on the device, so the
// grouped expert kernels can run every expert's tokens in one launch.
//   pair i = (token i / top_k, group ids[i], weight weights[i]), i < n_pairs
//   (ids null: every pair in group 0 -- a dense MLP as one "expert";
//    weights null: weight 1)
// Outputs (the "sorted" order is by group; the order within a group is
// whatever the atomics gave -- every pair's outputs are computed
// independently and combined by token, so results do not depend on it):
//   group_offsets: [n_groups + 1]  sorted pairs of group g: [off[g], off[g+1])
//   pair_token, pair_weight, pair_group: [n_pairs] per sorted pair
//   pair_pos:      [n_pairs] sorted position of pair i (for the combine)
//   tiles:         the GEMM work list (moe_tiles.h): tile_group, tile_row0
//                  and n_tiles[0]; at most max_expert_tiles(n_pairs, n_groups).
// One block does it all: n_pairs is at most a few thousand.
#pragma once

#include "kernels/cuda/cuda_types.h"
#include "kernels/cuda/moe_tiles.h"

namespace dancemoe::kernels::cuda {

struct GroupArgs {
  const int32_t* ids = nullptr;
  const float* weights = nullptr;
  int64_t n_pairs = 0;
  int64_t top_k = 1;
  int64_t n_groups = 0;
  int32_t* group_offsets = nullptr;
  int32_t* pair_token = nullptr;
  float* pair_weight = nullptr;
  int32_t* pair_group = nullptr;
  int32_t* pair_pos = nullptr;
  int32_t* tile_group = nullptr;
  int32_t* tile_row0 = nullptr;
  int32_t* n_tiles = nullptr;
};

void group_pairs(const GroupArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
