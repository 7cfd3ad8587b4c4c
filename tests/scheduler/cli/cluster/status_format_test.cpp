// The text of `dancemoe status`: the scheduler's time and the report window,
// each node's last report, figures older than one window marked, and tables
// narrowed to a terminal's width.
#include "scheduler/cli/cluster/status_format.h"

#include <doctest/doctest.h>

#include <sstream>

#include "scheduler/cli/cluster/cluster_format.h"

namespace dancemoe::cli {
namespace {

using nlohmann::json;

json status_with(double age_a, const json& age_b) {
  json node_a = {{"id", "alpha"},
                 {"state", "up"},
                 {"local_hit_ratio_last_window", 0.5},
                 {"local_hit_ratio_since_adoption", 0.25},
                 {"requests_last_window", 3},
                 {"tokens_last_window", 40},
                 {"last_report_age_s", age_a},
                 {"placement_version", 2}};
  json node_b = node_a;
  node_b["id"] = "beta-with-a-rather-long-node-name-for-the-table";
  node_b["last_report_age_s"] = age_b;
  return {{"scheduler", {{"time_ms", int64_t{1764079509000}}, {"report_interval_s", 10.0}}},
          {"model", json::object()},
          {"placement", nullptr},
          {"nodes", {{"up", 2}, {"down", 0}, {"list", {node_a, node_b}}}},
          {"served_since_adoption", json::object()},
          {"last_decision", nullptr},
          {"migration", nullptr},
          {"counters", json::object()}};
}

TEST_CASE("status text: the time, each node's last report, and stale figures marked") {
  const std::string text = format_status(status_with(3.0, 25.0));
  CHECK(text.find("time       " + clock_text(1764079509000)) != std::string::npos);
  CHECK(text.find("report window of 10.0s") != std::string::npos);
  CHECK(text.find("3.0s ago") != std::string::npos);
  CHECK(text.find("25.0s ago") != std::string::npos);
  CHECK(text.find("*50.0%") != std::string::npos);  // beta's last window is old
  CHECK(text.find("* from a report older than one window") != std::string::npos);
  const std::string fresh = format_status(status_with(3.0, nullptr));
  CHECK(fresh.find("none yet") != std::string::npos);
  CHECK(fresh.find('*') == std::string::npos);
}

TEST_CASE("status text: tables fit the terminal's width") {
  const std::string text = format_status(status_with(3.0, 4.0), 80);
  std::istringstream lines(text);
  std::string line;
  bool cut = false;
  while (std::getline(lines, line)) {
    if (line.rfind("  ", 0) != 0) continue;  // table rows are indented
    CHECK(line.size() <= 80);
    cut |= line.find('~') != std::string::npos;
  }
  CHECK(cut);  // the long node name was cut
  CHECK(table({{"A", "B"}, {"xxxxxxxxxx", "yyyyyyyyyy"}}, "", 14) == "A       B\nxxxxx~  yyyyy~\n");
}

}  // namespace
}  // namespace dancemoe::cli
