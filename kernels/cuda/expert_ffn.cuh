// The grouped expert FFN: every expert of a layer (every "group") over the
// tokens routed to it, in two launches for the whole layer:
//   gate/up:  h[p, :] = bf16( act(x[tok(p)] G_g^T + gb_g, x[tok(p)] U_g^T + ub_g) )
//   down:     d[p, :] = h[p] D_g^T + db_g                (f32, not yet weighted)
//   act: SwiGLU silu(g) * u, or with `clamped` gpt-oss's clamped SwiGLU
//   (swiglu.cuh); the biases gb, ub, db: per-group device pointers (gpt-oss),
//   a null table or entry meaning none.
// for every sorted pair p of group g (moe_group.cuh); the weighted sum per
// token is moe_combine.cuh.
//   x: [n_tokens, hidden] bf16, row stride x_stride (rounded activations,
//      as the CPU's bf16 mode)
//   G_g, U_g: [inter, hidden] bf16; D_g: [hidden, inter] bf16, given as
//      device arrays of device pointers per group; a null gate pointer skips
//      the group (an expert that lives on another device or node)
//   h: [max_pairs, inter] bf16; d: [max_pairs, hidden] f32
//
//   *_gemv: decode. Memory bound: one warp per output row streaming the
//           weights with 16-byte loads; the pairs of a group are taken up to
//           4 at a time, so each weight row is read once per 4 tokens.
//           Grid: (rows / 8) x max_pairs, blocks of absent pairs exit.
//   *_gemm: prefill. Tensor cores (mma_tile.cuh): one 64 x 64 tile per
//           (work-list tile, output column block); gate and up share the
//           staged activations and SwiGLU runs in the epilogue.
//           Needs hidden % 8 == 0 and inter % 8 == 0.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

struct ExpertFfnArgs {
  const uint16_t* const* gate = nullptr;
  const uint16_t* const* up = nullptr;
  const uint16_t* const* down = nullptr;
  int64_t n_groups = 0;
  int64_t hidden = 0;
  int64_t inter = 0;
  // From group_pairs (or built on the host the same way).
  const int32_t* group_offsets = nullptr;
  const int32_t* pair_token = nullptr;
  const int32_t* pair_group = nullptr;
  const int32_t* tile_group = nullptr;
  const int32_t* tile_row0 = nullptr;
  const int32_t* n_tiles = nullptr;
  int64_t max_pairs = 0;
  // Ungrouped (GEMV only): pair p is token p / direct_top_k with expert
  // direct_ids[p] (group 0 when null) -- the router's output as it is, no
  // group_pairs launch. For one decode token, whose experts are distinct.
  bool direct = false;
  const int32_t* direct_ids = nullptr;
  int64_t direct_top_k = 1;
  // gpt-oss experts: per-group f32 bias tables ([inter], [inter], [hidden])
  // and the clamped activation.
  const float* const* gate_bias = nullptr;
  const float* const* up_bias = nullptr;
  const float* const* down_bias = nullptr;
  bool clamped = false;
  float alpha = 1.702f;
  float limit = 7.0f;
  const uint16_t* x = nullptr;
  int64_t x_stride = 0;
  uint16_t* h = nullptr;
  float* d = nullptr;
};

void expert_gate_up_gemv(const ExpertFfnArgs& args, Stream stream);
void expert_down_gemv(const ExpertFfnArgs& args, Stream stream);
void expert_gate_up_gemm(const ExpertFfnArgs& args, Stream stream);
void expert_down_gemm(const ExpertFfnArgs& args, Stream stream);

bool expert_gemm_supported(const ExpertFfnArgs& args);

// Both stages: GEMM when `batched` and supported, else GEMV.
void expert_ffn(const ExpertFfnArgs& args, bool batched, Stream stream);

}  // namespace dancemoe::kernels::cuda
