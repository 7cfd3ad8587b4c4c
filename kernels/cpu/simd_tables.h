// Entry points of the SIMD kernel tables. Each returns nullptr when this
// build does not include that level (DMOE_CPU_SIMD=OFF, or not x86-64); the
// caller (kernels.cpp) also checks the CPU before using one.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels {

const CpuKernels* avx2_table();
const CpuKernels* avx512_table();
const CpuKernels* avx512vnni_table();
const CpuKernels* avx512bf16_table();

// Reads n_bytes from data (64-byte aligned, n_bytes a multiple of 256) with
// the widest loads of one level and returns a value that depends on every
// byte, so the compiler cannot drop the reads. Used by memory_bandwidth.cpp.
using StreamReadFn = uint64_t (*)(const void* data, int64_t n_bytes);
StreamReadFn avx2_stream_read();
StreamReadFn avx512_stream_read();

}  // namespace dancemoe::kernels
