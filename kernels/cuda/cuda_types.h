// Plain C++ types shared by the CUDA ops' host-side declarations (the .cuh
// files). Including this needs no CUDA header, so the backend adapter and
// the tests, compiled by the host compiler, can call the ops directly.
//
// Conventions for every CUDA op (the CPU ops' conventions in kernels.h hold
// too): all pointers are device pointers unless a comment says "host";
// matrices are row-major with an explicit row stride in elements where one
// is given; bf16 is stored as uint16_t; every op is enqueued on the given
// stream and returns at once (launch errors surface at the next
// cudaGetLastError / synchronisation, which the caller checks).
//
// Token positions are read from device memory (`d_pos0`), not passed by
// value, so that a captured decode step (CUDA graph) can be replayed for the
// next position without re-capture.
#pragma once

#include <cstdint>

struct CUstream_st;

namespace dancemoe::kernels::cuda {

using Stream = CUstream_st*;

}  // namespace dancemoe::kernels::cuda
