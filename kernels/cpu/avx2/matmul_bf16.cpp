// y[t, r] = sum_c x[t, c] W[r, c] with bf16 activations and bf16 weights;
// f32 FMA accumulation. See matmul_tile.h.
//
// AVX2 has no bf16 arithmetic, so both operands are widened to f32. The
// activations are widened once per call into a per-thread buffer instead of
// in every tile: a 3-row x 4-token tile otherwise widens 4 activation
// vectors (two shuffle-port uops each) for 12 FMAs. Widening a bf16 is exact,
// so the products and their order -- the results -- are those of widening
// in registers; the tile runs ~20-35 % faster (bench_kernels GEMM,
// matmul_bf16 vs matmul_f32 on bf16 weights).
#include <cstdlib>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/matmul_tile.h"
#include "kernels/interleave.h"

namespace dancemoe::kernels::avx2 {
namespace {

// A growable f32 buffer per thread. Plain malloc, not std::vector: a std::
// template instantiated in this TU would be compiled with the AVX2 flags
// (see avx2_util.h and tests/kernels/check_isa_confinement.sh).
struct WidenedActivations {
  float* data = nullptr;
  size_t capacity = 0;
  ~WidenedActivations() { std::free(data); }

  // Null when out of memory.
  float* reserve(size_t n) {
    if (n > capacity) {
      std::free(data);
      data = static_cast<float*>(std::malloc(n * sizeof(float)));
      capacity = data == nullptr ? 0 : n;
    }
    return data;
  }
};

void widen(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_bf16x8(in + i));
  for (; i < n; ++i) out[i] = bf16_to_float(in[i]);
}

}  // namespace

void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16) {
  // An interleaved copy (kernels/interleave.h) has no kernel of its own here.
  if (args.w.layout == WeightLayout::kInterleaved16) {
    return matmul_deinterleaved<uint16_t>(args, x_bf16, matmul_bf16);
  }
  if (args.n_tokens <= 0 || args.row_end <= args.row_begin) return;
  thread_local WidenedActivations widened;
  const auto n = static_cast<size_t>(args.n_tokens * args.w.cols);
  float* x = widened.reserve(n);
  if (x == nullptr) {  // no memory for the copy: widen in registers, same results
    matmul_blocked<BF16Source, BF16Source>(args, x_bf16);
    return;
  }
  widen(x_bf16, n, x);
  matmul_blocked<BF16Source, F32Source>(args, x);
}

}  // namespace dancemoe::kernels::avx2
