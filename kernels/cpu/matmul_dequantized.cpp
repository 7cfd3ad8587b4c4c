#include "kernels/cpu/matmul_dequantized.h"

#include <vector>

#include "kernels/interleave.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe::kernels {

void matmul_dequantized(const MatmulArgs& args, const float* x, DotFn dot) {
  const WeightView& w = args.w;
  if (w.layout == WeightLayout::kInterleaved16) {
    // A group of 16 rows at a time in the rows layout (kernels/interleave.h).
    thread_local std::vector<uint8_t> group;
    group.resize(static_cast<size_t>(kInterleaveRows * weight_row_bytes(w.type, w.cols)));
    for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kInterleaveRows) {
      deinterleave_rows(w.type, w.data, w.cols, r0, kInterleaveRows, group.data());
      MatmulArgs chunk = args;
      chunk.w = WeightView{group.data(), w.type, kInterleaveRows, w.cols, WeightLayout::kRows};
      chunk.y = args.y + r0;
      chunk.row_begin = 0;
      chunk.row_end = kInterleaveRows;
      matmul_dequantized(chunk, x, dot);
    }
    return;
  }
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(w.cols));
  for (int64_t r = args.row_begin; r < args.row_end; ++r) {
    dequantize_values(w.type, static_cast<const uint8_t*>(w.data) + r * row_bytes, w.cols,
                      row.data());
    for (int64_t t = 0; t < args.n_tokens; ++t) {
      args.y[t * args.y_stride + r] = dot(row.data(), x + t * w.cols, w.cols);
    }
  }
}

}  // namespace dancemoe::kernels
