// The weighted combine of a MoE layer into the residual stream:
//   out[t, :] += sum_{e in entries(t)} weight[e] * d[pos[e], :]
//   d: [pairs, hidden] f32 per sorted pair (expert_ffn.cuh)
//   entries(t): [t * top_k, (t + 1) * top_k) when token_start is null (every
//     token has top_k pairs: pos = group_pairs' pair_pos, weight = the
//     router weights in router order), else [token_start[t], token_start[t+1])
//   weights null: weight 1 (dense MLP layers); pos null: pos[e] = e (the
//     ungrouped decode path of expert_ffn.cuh)
//   out: [n_tokens, out_stride] f32
// Entries are added in entry order, each token by one thread per column, so
// the result does not depend on the launch shape.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

struct CombineArgs {
  const float* d = nullptr;
  int64_t hidden = 0;
  const int32_t* pos = nullptr;
  const float* weights = nullptr;
  const int32_t* token_start = nullptr;
  int64_t n_tokens = 0;
  int64_t top_k = 1;
  float* out = nullptr;
  int64_t out_stride = 0;
};

void moe_combine(const CombineArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
