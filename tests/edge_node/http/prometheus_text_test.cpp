#include "edge_node/http/prometheus_text.h"

#include <doctest/doctest.h>

#include "edge_node/activation/latency_histogram.h"

namespace dancemoe::node {

TEST_CASE("prometheus text: families, escaped labels and cumulative histograms") {
  PrometheusWriter out;
  out.family("dancemoe_x_total", "counter", "a counter");
  out.sample("dancemoe_x_total", {{"peer", "a\"b\\c\nd"}}, 3);
  BucketHistogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.5);
  h.observe(7.0);
  out.family("dancemoe_y_seconds", "histogram", "a histogram");
  out.histogram("dancemoe_y_seconds", {{"endpoint", "/v1/completions"}}, h.snapshot());
  const std::string& t = out.text();
  CHECK(t.find("# HELP dancemoe_x_total a counter\n# TYPE dancemoe_x_total counter\n") == 0);
  CHECK(t.find("dancemoe_x_total{peer=\"a\\\"b\\\\c\\nd\"} 3\n") != std::string::npos);
  CHECK(t.find("dancemoe_y_seconds_bucket{endpoint=\"/v1/completions\",le=\"0.1\"} 1\n") !=
        std::string::npos);
  CHECK(t.find("dancemoe_y_seconds_bucket{endpoint=\"/v1/completions\",le=\"1\"} 3\n") !=
        std::string::npos);
  CHECK(t.find("dancemoe_y_seconds_bucket{endpoint=\"/v1/completions\",le=\"+Inf\"} 4\n") !=
        std::string::npos);
  CHECK(t.find("dancemoe_y_seconds_sum{endpoint=\"/v1/completions\"} 8.05\n") != std::string::npos);
  CHECK(t.find("dancemoe_y_seconds_count{endpoint=\"/v1/completions\"} 4\n") != std::string::npos);
}

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
