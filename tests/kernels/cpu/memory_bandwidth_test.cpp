#include "kernels/cpu/memory_bandwidth.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace dancemoe::kernels {
namespace {

TEST_CASE("memory bandwidth: a small measurement is positive and physically plausible") {
  // 8 MiB fits in many caches, so this checks the mechanics, not DRAM speed:
  // anything between 100 MB/s and 10 TB/s is a real measurement.
  for (int n_threads : {1, 2}) {
    const double bytes_per_s = measure_read_bandwidth_bytes_per_s(int64_t{8} << 20, n_threads, 0.0);
    INFO("threads ", n_threads, ": ", bytes_per_s / 1e9, " GB/s");
    CHECK(bytes_per_s > 1e8);
    CHECK(bytes_per_s < 1e13);
  }
}

TEST_CASE("memory bandwidth: invalid parameters give 0 instead of a number") {
  CHECK(measure_read_bandwidth_bytes_per_s(1024, 1, 0.0) == 0.0);
  CHECK(measure_read_bandwidth_bytes_per_s(int64_t{8} << 20, 0, 0.0) == 0.0);
  CHECK(measure_read_bandwidth_bytes_per_s(int64_t{8} << 20, 1, -1.0) == 0.0);
}

TEST_CASE("memory bandwidth: read_once reads every 256-byte block it is given") {
  constexpr int64_t kBytes = 4096;
  std::unique_ptr<uint64_t, decltype(&std::free)> buffer(
      static_cast<uint64_t*>(std::aligned_alloc(64, kBytes)), &std::free);
  for (int64_t i = 0; i < kBytes / 8; ++i) buffer.get()[i] = static_cast<uint64_t>(i);
  // Sum of 0..511 over the whole buffer; 0..479 when the last 256 bytes (32
  // words) are cut off by a length that is not a multiple of 256.
  CHECK(read_once(buffer.get(), kBytes) == 511u * 512u / 2u);
  CHECK(read_once(buffer.get(), kBytes - 8) == 479u * 480u / 2u);
}

}  // namespace
}  // namespace dancemoe::kernels
