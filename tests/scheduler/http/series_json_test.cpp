// The dashboard's JSON shapes and the scheduler's metric text, from values
// built by hand.
#include "scheduler/http/series_json.h"

#include <doctest/doctest.h>

#include "scheduler/http/scheduler_metrics.h"

namespace dancemoe::scheduler {

TEST_CASE("series json: windows align to whole steps and include the current bucket") {
  const store::SeriesRange r = series_range(1'000'123, 600, 60);
  CHECK(r.step_ms == 10'000);
  CHECK(r.n_buckets == 60);
  CHECK(r.end_ms() == 1'010'000);  // the bucket holding now ends after it
  CHECK(r.from_ms == 1'010'000 - 600'000);
  CHECK(series_range(1'000'123, 10, 1000).step_ms == 10);
  CHECK(series_range(5, 0.001, 3).step_ms == 1);  // never a zero step
}

TEST_CASE("series json: ratios and means are null where nothing was measured") {
  store::ClusterSeries s;
  s.range = {0, 1000, 2};
  s.nodes["a"] = {{10, 0}, {4, 0}, {5, 0}, {1, 0}, {2, 0}, {300, 0}};
  s.peers["b"] = {{2, 0}, {500.0, 0.0}};
  s.migration_bytes = {0, 64};
  s.placements = {{2, 1500, "optimal", "periodic"}};
  const nlohmann::ordered_json j = series_json(s, 1700);
  CHECK(j["nodes"][0]["local_hit_ratio"][0] == doctest::Approx(0.4));
  CHECK(j["nodes"][0]["local_hit_ratio"][1].is_null());
  CHECK(j["peers"][0]["mean_latency_us"][0] == doctest::Approx(250.0));
  CHECK(j["peers"][0]["mean_latency_us"][1].is_null());
  CHECK(j["bytes_moved"]["remote_call_bytes"] == nlohmann::json{300, 0});
  CHECK(j["bytes_moved"]["migration_bytes"] == nlohmann::json{0, 64});
  CHECK(j["placements"][0]["trigger"] == "periodic");
}

TEST_CASE("series json: heat is a layer x expert grid per node and in total") {
  const ModelInfo model = ModelInfo::synthetic("m", 3, 2, 1, 100, {0, 2});
  std::map<std::string, std::vector<double>> counts;
  counts["a"] = {1, 0, 0, 7};
  counts["b"] = {2, 0, 3, 0};
  const nlohmann::ordered_json j = heat_json(counts, model, 55, 4);
  CHECK(j["layers"] == nlohmann::json{0, 2});
  CHECK(j["nodes"][0]["counts"] == nlohmann::json{{1, 0}, {0, 7}});
  CHECK(j["nodes"][0]["total"] == 8);
  CHECK(j["total"] == nlohmann::json{{3, 0}, {3, 7}});
  CHECK(j["version"] == 4);
  CHECK(heat_json({}, model, 0, std::nullopt)["version"].is_null());
}

TEST_CASE("scheduler metrics: a status without a placement or decision still makes valid text") {
  nlohmann::ordered_json status = {
      {"scheduler", {{"uptime_s", 3.5}, {"db_bytes", 4096}}},
      {"placement", nullptr},
      {"nodes", {{"up", 1}, {"down", 0}, {"unknown", 0}, {"list", nlohmann::json::array()}}},
      {"last_decision", nullptr},
      {"migration", nullptr},
      {"counters", {{"rounds_skipped_total", 2}, {"rejected_model_mismatch_total", 1}}}};
  http::PrometheusWriter out;
  write_scheduler_metrics(out, status);
  const std::string& t = out.text();
  CHECK(t.find("dancemoe_scheduler_placement_version 0\n") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_rounds_total{outcome=\"skipped\"} 2\n") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_rejected_total{reason=\"model_mismatch\"} 1\n") !=
        std::string::npos);
  CHECK(t.find("dancemoe_scheduler_database_bytes 4096\n") != std::string::npos);
  CHECK(t.find("gate_seconds") == std::string::npos);  // no decision yet
  CHECK(t.find("migration_progress") == std::string::npos);
  http::PrometheusWriter empty;
  write_scheduler_metrics(empty, nlohmann::ordered_json::object());  // never throws
  CHECK(empty.text().find("dancemoe_scheduler_uptime_seconds 0\n") != std::string::npos);
}

}  // namespace dancemoe::scheduler
