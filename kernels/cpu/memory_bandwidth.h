// A streaming-read memory bandwidth measurement, printed by `dancemoe bench`
// and used by the kernel benchmarks as the ceiling for memory-bound kernels
// (a decode-time matmul reads every weight once from DRAM).
//
// Thread-safety: may be called from any thread; it starts its own threads and
// saturates the memory bus while it runs, so results are only meaningful on
// an otherwise idle machine.
#pragma once

#include <cstdint>

namespace dancemoe::kernels {

struct ReadBandwidthParams {
  // Well beyond the last-level cache, so the reads come from DRAM.
  int64_t buffer_bytes = int64_t{256} << 20;
  // Each thread reads its own contiguous 1/n_threads of the buffer.
  int n_threads = 1;
  // Repetitions continue until this much time has passed (at least 3).
  double min_seconds = 0.5;
};

// Bytes per second of the fastest repetition: all threads start together
// (barrier), each reads its slice once with the widest loads of the active
// CPU level, and the time runs until the last thread finishes. The buffer is
// allocated, touched (so no page faults are timed) and freed inside. Returns
// 0 when the parameters are invalid (buffer_bytes < 1 MiB, n_threads < 1,
// min_seconds < 0) or the buffer cannot be allocated.
double measure_read_bandwidth_bytes_per_s(const ReadBandwidthParams& params);

// Shorthand for the above.
double measure_read_bandwidth_bytes_per_s(int64_t buffer_bytes, int n_threads, double min_seconds);

}  // namespace dancemoe::kernels
