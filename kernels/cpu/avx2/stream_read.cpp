// The read loop of the memory bandwidth benchmark (cpu/memory_bandwidth.h):
// aligned 32-byte loads, four independent accumulators so the loop is bound
// by the loads, not by the adds.
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"

namespace dancemoe::kernels::avx2 {

uint64_t stream_read(const void* data, int64_t n_bytes) {
  const auto* p = static_cast<const __m256i*>(data);
  __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (int64_t i = 0; i < n_bytes / 32; i += 4) {
    acc0 = _mm256_add_epi64(acc0, _mm256_load_si256(p + i));
    acc1 = _mm256_add_epi64(acc1, _mm256_load_si256(p + i + 1));
    acc2 = _mm256_add_epi64(acc2, _mm256_load_si256(p + i + 2));
    acc3 = _mm256_add_epi64(acc3, _mm256_load_si256(p + i + 3));
  }
  const __m256i sum = _mm256_add_epi64(_mm256_add_epi64(acc0, acc1), _mm256_add_epi64(acc2, acc3));
  const __m128i half = _mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(half)) +
         static_cast<uint64_t>(_mm_extract_epi64(half, 1));
}

}  // namespace dancemoe::kernels::avx2
