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
  // false: each repetition reads a 16 MiB chunk per thread and the fastest
  // repetition counts (the burst bandwidth of an undisturbed moment).
  // true: each repetition is a whole pass over the buffer and the median
  // counts -- what a long stream such as a decode step actually sees on a
  // shared host (measured here: ~25 % below the burst figure).
  bool sustained = false;
};

// Bytes per second of the fastest repetition. In a repetition all threads
// start together (barrier) and each reads the next 16 MiB of its slice with
// the widest loads of the active CPU level; the repetition lasts from the
// first thread's start to the last one's end (each thread takes its own
// timestamps, so barrier wake-up latency is not counted). Chunks rotate
// through the whole buffer, so every read comes from DRAM, and repetitions are
// short (about a millisecond) so that on a shared machine some of them run
// undisturbed. The buffer is allocated, touched (no page faults are timed)
// and freed inside. Returns 0 when the parameters are invalid (buffer_bytes <
// 1 MiB per thread, n_threads < 1, min_seconds < 0) or the buffer cannot be
// allocated.
double measure_read_bandwidth_bytes_per_s(const ReadBandwidthParams& params);

// Shorthand for the above (burst).
double measure_read_bandwidth_bytes_per_s(int64_t buffer_bytes, int n_threads, double min_seconds);

// Shorthand for the above with sustained = true.
double measure_sustained_read_bandwidth_bytes_per_s(int64_t buffer_bytes, int n_threads,
                                                    double min_seconds);

// The read loop used above, for benchmarks that time it themselves: reads
// n_bytes at data once with the widest loads of the active CPU level and
// returns a checksum of them. data must be 64-byte aligned; bytes past the
// last multiple of 256 are not read.
uint64_t read_once(const void* data, int64_t n_bytes);

}  // namespace dancemoe::kernels
