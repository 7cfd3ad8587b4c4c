#include "common/model/gguf/gguf_kv_b.h"

#include <cstring>
#include <vector>

#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe::gguf {

kernels::WeightType assembled_kv_b_type(kernels::WeightType k_b, kernels::WeightType v_b) {
  if (k_b == v_b && !kernels::is_block_format(k_b)) return k_b;
  return kernels::WeightType::kF32;
}

void assemble_kv_b(const SplitKvB& s, uint8_t* out) {
  const kernels::WeightType type = assembled_kv_b_type(s.k_b.type, s.v_b.type);
  const auto elem = static_cast<size_t>(kernels::weight_row_bytes(type, 1));
  const size_t out_row = elem * static_cast<size_t>(s.rank);
  const auto k_head = static_cast<uint64_t>(kernels::weight_row_bytes(s.k_b.type, s.nope)) *
                      static_cast<uint64_t>(s.rank);
  const auto v_head = static_cast<uint64_t>(kernels::weight_row_bytes(s.v_b.type, s.rank)) *
                      static_cast<uint64_t>(s.v_dim);
  // Float parts of one type move element by element; block formats go
  // through their f32 values.
  const bool raw = type == s.k_b.type && type == s.v_b.type;
  std::vector<float> k_values(raw ? 0 : static_cast<size_t>(s.rank * s.nope));
  std::vector<float> v_values(raw ? 0 : static_cast<size_t>(s.v_dim * s.rank));
  for (int64_t h = 0; h < s.n_heads; ++h) {
    const uint8_t* k = s.k_b.data + static_cast<uint64_t>(h) * k_head;  // [rank][nope]
    const uint8_t* v = s.v_b.data + static_cast<uint64_t>(h) * v_head;  // [v_dim][rank]
    uint8_t* head_out = out + static_cast<size_t>(h * (s.nope + s.v_dim)) * out_row;
    if (!raw) {
      // One row of a block format is whole blocks; a head's rows are contiguous.
      kernels::dequantize_values(s.k_b.type, k, s.rank * s.nope, k_values.data());
      kernels::dequantize_values(s.v_b.type, v, s.v_dim * s.rank, v_values.data());
      k = reinterpret_cast<const uint8_t*>(k_values.data());
      v = reinterpret_cast<const uint8_t*>(v_values.data());
    }
    // W_UK[h] row d, column r = k_b[h][r][d].
    for (int64_t d = 0; d < s.nope; ++d) {
      uint8_t* row = head_out + static_cast<size_t>(d) * out_row;
      for (int64_t r = 0; r < s.rank; ++r) {
        std::memcpy(row + static_cast<size_t>(r) * elem,
                    k + (static_cast<size_t>(r * s.nope + d)) * elem, elem);
      }
    }
    std::memcpy(head_out + static_cast<size_t>(s.nope) * out_row, v,
                static_cast<size_t>(s.v_dim) * out_row);
  }
}

}  // namespace dancemoe::gguf
