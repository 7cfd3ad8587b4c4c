// The read loop of the memory bandwidth benchmark (cpu/memory_bandwidth.h):
// aligned 64-byte loads, four independent accumulators so the loop is bound
// by the loads, not by the adds.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"

namespace dancemoe::kernels::avx512 {

uint64_t stream_read(const void* data, int64_t n_bytes) {
  const auto* p = static_cast<const __m512i*>(data);
  __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (int64_t i = 0; i < n_bytes / 64; i += 4) {
    acc0 = _mm512_add_epi64(acc0, _mm512_load_si512(p + i));
    acc1 = _mm512_add_epi64(acc1, _mm512_load_si512(p + i + 1));
    acc2 = _mm512_add_epi64(acc2, _mm512_load_si512(p + i + 2));
    acc3 = _mm512_add_epi64(acc3, _mm512_load_si512(p + i + 3));
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(acc0, acc1), _mm512_add_epi64(acc2, acc3))));
}

}  // namespace dancemoe::kernels::avx512
