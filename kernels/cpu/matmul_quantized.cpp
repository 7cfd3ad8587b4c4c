// matmul_quantized (kernels.h): the choice between the integer kernel and
// dequantize + float GEMM, and the chunked dequantization. Compiled for
// baseline x86-64: it only calls the level's ops through the table.
#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quant_format.h"

namespace dancemoe::kernels {
namespace {

// Rows per chunk: about 64 KiB of bf16 weights (the bf16 GEMM's L2 chunk),
// a multiple of its 4-row tile.
int64_t chunk_rows(int64_t cols) {
  const int64_t rows = (int64_t{64} << 10) / (2 * std::max<int64_t>(cols, 1)) / 4 * 4;
  return std::max<int64_t>(rows, 4);
}

}  // namespace

int64_t quant_gemm_min_tokens(WeightType type) {
  switch (type) {
    case WeightType::kQ4_K:
    case WeightType::kQ5_K:
      return std::numeric_limits<int64_t>::max();  // never: matmul_k_grouped leads
    case WeightType::kQ6_K:
      return 48;
    default:
      return kQuantGemmMinTokens;
  }
}

void matmul_quantized(const CpuKernels& k, const MatmulArgs& args, const QuantizedInput& x) {
  // Measured (bench_quant_kernels --only gemm --tokens 32,48,64,96,128,256,
  // one thread, Zen 4; quant_gemm_min_tokens in kernels.h).
  const bool bf16_gemm = x.bf16 != nullptr && args.w.layout == WeightLayout::kRows &&
                         k.level >= CpuLevel::kAvx512Bf16 &&
                         args.n_tokens >= quant_gemm_min_tokens(args.w.type);
  if (!bf16_gemm) {
    k.matmul_quant(args, x.q);
    return;
  }
  const WeightView& w = args.w;
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  const int64_t step = chunk_rows(w.cols);
  thread_local std::vector<float> f32;
  thread_local std::vector<uint16_t> bf16;
  f32.resize(static_cast<size_t>(step * w.cols));
  bf16.resize(f32.size());
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += step) {
    const int64_t n = std::min(step, args.row_end - r0);
    k.dequantize(w.type, static_cast<const uint8_t*>(w.data) + r0 * row_bytes, n * w.cols,
                 f32.data());
    k.f32_to_bf16(f32.data(), n * w.cols, bf16.data());
    MatmulArgs chunk = args;
    chunk.y = args.y + r0;
    chunk.row_begin = 0;
    chunk.row_end = n;
    chunk.w = WeightView{bf16.data(), WeightType::kBF16, n, w.cols};
    k.matmul_bf16(chunk, x.bf16);
  }
}

}  // namespace dancemoe::kernels
