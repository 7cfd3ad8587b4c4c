// Embedding lookup:
//   out[t, :] = f32(table[ids[t], :])
//   table: [vocab, hidden] bf16; ids: [n_tokens] int32 (already checked to be
//   < vocab by the caller); out: [n_tokens, hidden] f32.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

void embedding(const uint16_t* table, int64_t hidden, const int32_t* ids, int64_t n_tokens,
               float* out, Stream stream);

}  // namespace dancemoe::kernels::cuda
