#include "edge_node/remote/wire_tensor.h"

#include <algorithm>
#include <cstring>

#include "kernels/kernels.h"

namespace dancemoe::node {

void encode_rows(const float* x, int64_t n_rows, int64_t hidden, DType dtype,
                 std::vector<uint8_t>* out) {
  const size_t n = static_cast<size_t>(n_rows * hidden);
  const size_t at = out->size();
  out->resize(at + n * dtype_size_bytes(dtype));
  if (dtype == DType::kF32) {
    std::memcpy(out->data() + at, x, n * sizeof(float));
  } else {
    // uint8_t storage may be unaligned for uint16_t; convert through a
    // bounded aligned staging buffer.
    constexpr size_t kBlock = 4096;
    uint16_t staging[kBlock];
    const kernels::CpuKernels& k = kernels::cpu_kernels();
    for (size_t i = 0; i < n; i += kBlock) {
      const size_t m = std::min(kBlock, n - i);
      k.f32_to_bf16(x + i, static_cast<int64_t>(m), staging);
      std::memcpy(out->data() + at + i * 2, staging, m * 2);
    }
  }
}

Status decode_rows(std::span<const uint8_t> bytes, DType dtype, int64_t n, float* out) {
  const size_t need = static_cast<size_t>(n) * dtype_size_bytes(dtype);
  if (bytes.size() != need) {
    return invalid_argument("tensor frame of " + std::to_string(bytes.size()) + " bytes, " +
                            std::to_string(n) + " " + std::string(dtype_name(dtype)) +
                            " elements need " + std::to_string(need));
  }
  if (dtype == DType::kF32) {
    std::memcpy(out, bytes.data(), need);
    return Status::ok();
  }
  constexpr size_t kBlock = 4096;
  uint16_t staging[kBlock];
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const size_t total = static_cast<size_t>(n);
  for (size_t i = 0; i < total; i += kBlock) {
    const size_t m = std::min(kBlock, total - i);
    std::memcpy(staging, bytes.data() + i * 2, m * 2);
    if (dtype == DType::kBF16) {
      k.bf16_to_f32(staging, static_cast<int64_t>(m), out + i);
    } else {
      k.f16_to_f32(staging, static_cast<int64_t>(m), out + i);
    }
  }
  return Status::ok();
}

Status check_finite_rows(std::span<const float> rows, int64_t hidden) {
  // An exponent of all ones is NaN or +-Inf; testing the bits (rather than
  // std::isfinite) lets the loop vectorise, and it stays exact under
  // -ffast-math should a build use it.
  const size_t n = rows.size();
  size_t i = 0;
  while (i < n) {
    const size_t end = std::min(n, i + 4096);
    uint32_t bad = 0;
    for (size_t j = i; j < end; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &rows[j], sizeof bits);
      bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (bad != 0) {
      for (size_t j = i; j < end; ++j) {
        uint32_t bits;
        std::memcpy(&bits, &rows[j], sizeof bits);
        if ((bits & 0x7f800000u) == 0x7f800000u) {
          return invalid_argument("result row " + std::to_string(j / static_cast<size_t>(hidden)) +
                                  " holds a NaN or an infinity; a peer's result is used only "
                                  "when every value is finite");
        }
      }
    }
    i = end;
  }
  return Status::ok();
}

}  // namespace dancemoe::node
