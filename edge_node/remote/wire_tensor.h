// Hidden-state tensors on the wire: [n_tokens, hidden] rows in f32 or bf16
// (DESIGN.md §3: bf16 by default). Encoding rounds f32 to bf16 to nearest
// even; decoding widens exactly. f16 is decoded (a peer may send it) but
// this runtime never encodes it. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/tensor/dtype.h"

namespace dancemoe::node {

// Appends the rows of `x` ([n_rows, hidden] f32) to `out` as `dtype` bytes.
// dtype must be kF32 or kBF16.
void encode_rows(const float* x, int64_t n_rows, int64_t hidden, DType dtype,
                 std::vector<uint8_t>* out);

// Widens `bytes` (n elements of `dtype`) into `out` (n floats).
// invalid_argument when the byte count is not n elements.
Status decode_rows(std::span<const uint8_t> bytes, DType dtype, int64_t n, float* out);

// invalid_argument naming the first row ([rows, hidden]) that holds a NaN or
// an infinity: a peer's result with one is not added to an answer
// (docs/security.md); the call fails and another holder is tried.
Status check_finite_rows(std::span<const float> rows, int64_t hidden);

}  // namespace dancemoe::node
