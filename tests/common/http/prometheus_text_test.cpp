#include "common/http/prometheus_text.h"

#include <doctest/doctest.h>

namespace dancemoe::http {

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

}  // namespace dancemoe::http
