#include "edge_node/activation/latency_histogram.h"

#include <doctest/doctest.h>

namespace dancemoe::node {

TEST_CASE("latency histogram: count_at_most_us is exact at bucket edges") {
  LatencyHistogram h;
  h.add(100);   // just above 2^6.625 = 98.7
  h.add(1000);  // ~2^9.97
  h.add(2000);  // ~2^10.97
  CHECK(h.count_at_most_us(50) == 0);
  CHECK(h.count_at_most_us(1024) == 2);  // 2^10 is a bucket edge: 1000 is below it
  CHECK(h.count_at_most_us(4096) == 3);
  CHECK(h.sum_us() == doctest::Approx(3100));
}

}  // namespace dancemoe::node
