// The read loop of the memory bandwidth benchmark (cpu/memory_bandwidth.h)
// for CPUs without AVX2: 8-byte loads summed into four accumulators.
#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

uint64_t stream_read(const void* data, int64_t n_bytes) {
  const auto* p = static_cast<const uint64_t*>(data);
  uint64_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
  for (int64_t i = 0; i < n_bytes / 8; i += 4) {
    acc0 += p[i];
    acc1 += p[i + 1];
    acc2 += p[i + 2];
    acc3 += p[i + 3];
  }
  return acc0 + acc1 + acc2 + acc3;
}

}  // namespace dancemoe::kernels::scalar
