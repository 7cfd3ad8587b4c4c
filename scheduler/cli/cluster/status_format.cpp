#include "scheduler/cli/cluster/status_format.h"

#include <algorithm>
#include <string>
#include <vector>

#include "scheduler/cli/cluster/cluster_format.h"

namespace dancemoe::cli {

using nlohmann::json;

std::string format_status(const json& s, size_t max_width) {
  const Palette p{use_colour()};
  std::string out;
  const json& scheduler = s.contains("scheduler") ? s["scheduler"] : json::object();
  const double window_s = scheduler.value("report_interval_s", 0.0);
  if (scheduler.contains("time_ms")) {
    out += p.bold("time       ") + clock_text(scheduler["time_ms"].get<int64_t>()) +
           " (scheduler); node figures are per report window of " + duration_text(window_s) +
           ", so the newest lags by up to one window\n";
  }
  const json& model = s["model"];
  out += p.bold("model      ") + model.value("id", std::string()) + "  (" +
         std::to_string(model.value("moe_layers", 0)) + " MoE layers x " +
         std::to_string(model.value("experts_per_layer", 0)) + " experts, top-" +
         std::to_string(model.value("top_k", 0)) + ", " +
         bytes_text(model.value("expert_bytes", 0.0)) + " per expert)\n";
  const json& placement = s["placement"];
  if (placement.is_null()) {
    out += p.bold("placement  ") + p.warn("none committed yet") + "\n";
  } else {
    out += p.bold("placement  ") + "version " + std::to_string(placement.value("version", 0)) +
           " (" + placement.value("policy", std::string()) + ", " +
           placement.value("trigger", std::string()) + "), committed " +
           duration_text(placement.value("age_s", 0.0)) + " ago\n";
  }
  const json& nodes = s["nodes"];
  std::string counts = std::to_string(nodes.value("up", 0)) + " up, " +
                       std::to_string(nodes.value("down", 0)) + " down";
  if (nodes.value("unknown", 0) > 0) {
    counts += ", " + std::to_string(nodes.value("unknown", 0)) + " not re-attached";
  }
  out += p.bold("nodes      ") + counts + "\n";
  const json& security = s["security"];
  if (security.is_object()) {
    out += p.bold("security   ") +
           (security.value("curve", false)
                ? "CurveZMQ, " + std::to_string(security.value("node_keys", 0)) +
                      " admitted node key(s), " +
                      std::to_string(security.value("operator_keys", 0)) + " operator key(s)"
                : p.warn("INSECURE: no keys, anyone on the network may control the cluster")) +
           "\n";
  }
  std::vector<std::vector<std::string>> rows = {{"NODE", "STATE", "HIT LAST", "HIT SINCE",
                                                 "REQUESTS", "TOKENS", "LAST WINDOW", "LAST REPORT",
                                                 "VERSION"}};
  size_t i = 0;
  bool any_stale = false;
  for (const json& n : nodes["list"]) {
    const std::string state = n.value("state", std::string());
    const json age = n.contains("last_report_age_s") ? n["last_report_age_s"] : json();
    // Older than one report window (with a second of slack for delivery).
    const bool stale = age.is_number() && window_s > 0 && age.get<double>() > window_s + 1.0;
    any_stale |= stale;
    const std::string mark = stale ? "*" : "";
    rows.push_back(
        {p.node(i++, n.value("id", std::string())), state == "up" ? state : p.warn(state),
         mark + ratio_text(n["local_hit_ratio_last_window"]),
         ratio_text(n["local_hit_ratio_since_adoption"]),
         std::to_string(n.value("requests_since_adoption", uint64_t{0})),
         std::to_string(n.value("tokens_since_adoption", uint64_t{0})),
         mark + std::to_string(n.value("requests_last_window", uint64_t{0})) + " req / " +
             std::to_string(n.value("tokens_last_window", uint64_t{0})) + " tok",
         age.is_number()                   ? duration_text(age.get<double>()) + " ago"
         : n.contains("last_report_age_s") ? std::string("none yet")
                                           : std::string("-"),
         std::to_string(n.value("placement_version", uint64_t{0}))});
  }
  if (rows.size() > 1) out += table(rows, "  ", max_width);
  if (any_stale) {
    out += p.dim("  * from a report older than one window (" + duration_text(window_s) +
                 "): that node has not reported since") +
           "\n";
  }
  // Each node's devices: what the committed placement puts on them, against
  // their budgets, and how fast each computes an expert.
  std::vector<std::vector<std::string>> devices = {
      {"NODE", "DEVICE", "KIND", "EXPERTS", "USED", "BUDGET", "US/PAIR"}};
  i = 0;
  for (const json& n : nodes["list"]) {
    const std::string id = p.node(i++, n.value("id", std::string()));
    if (!n.contains("devices")) continue;
    for (const json& d : n["devices"]) {
      char speed[32] = "-";
      if (d["us_per_pair"].is_number()) {
        std::snprintf(speed, sizeof speed, "%.1f", d["us_per_pair"].get<double>());
      }
      devices.push_back({id, d.value("name", std::string()),
                         d["kind"].is_string() ? d["kind"].get<std::string>() : "-",
                         std::to_string(d.value("experts", int64_t{0})),
                         bytes_text(d.value("bytes_used", 0.0)),
                         bytes_text(d.value("budget_bytes", 0.0)), speed});
    }
  }
  if (devices.size() > 1) out += p.bold("devices") + "\n" + table(devices, "  ", max_width);
  const json& served = s["served_since_adoption"];
  out += p.bold("served     ") + std::to_string(served.value("requests", uint64_t{0})) +
         " requests, " + std::to_string(served.value("tokens", uint64_t{0})) +
         " tokens since adoption\n";
  out +=
      p.bold("decision   ") +
      (s["last_decision"].is_null() ? std::string("none yet") : decision_text(s["last_decision"])) +
      "\n";
  const json& m = s["migration"];
  if (m.is_null()) {
    out += p.bold("migration  ") + "none in progress\n";
  } else {
    std::string waiting;
    for (const json& w : m["waiting"])
      waiting += (waiting.empty() ? "" : ", ") + w.get<std::string>();
    // A text progress bar of the nodes' loading, for `status --watch`.
    const double progress = m["progress"].is_number() ? m["progress"].get<double>() : 0.0;
    const int filled = static_cast<int>(progress * 30.0 + 0.5);
    std::string bar = "[";  // appended: `"[" + std::string&&` trips GCC 12's -Wrestrict
    bar.append(static_cast<size_t>(std::clamp(filled, 0, 30)), '#');
    bar.append(static_cast<size_t>(30 - std::clamp(filled, 0, 30)), '.');
    bar += "] ";
    out += p.bold("migration  ") + bar + "version " + std::to_string(m.value("from_version", 0)) +
           " -> " + std::to_string(m.value("version", 0)) + " (" +
           m.value("trigger", std::string()) + "): " + std::to_string(m["ready"].size()) + "/" +
           std::to_string(m["ready"].size() + m["waiting"].size()) + " nodes ready (" +
           ratio_text(m["progress"]) + "), " + duration_text(m.value("elapsed_s", 0.0)) + " of " +
           duration_text(m.value("timeout_s", 0.0)) + ", " + bytes_text(m.value("bytes", 0.0)) +
           " to load" + (waiting.empty() ? "" : "; waiting for " + waiting) + "\n";
  }
  const json& counters = s["counters"];
  std::string rejected;
  for (const auto& [name, value] : counters.items()) {
    const std::string prefix = "rejected_";
    const std::string suffix = "_total";
    if (name.rfind(prefix, 0) == 0 && name != "rejected_total" && value.get<uint64_t>() > 0) {
      rejected += (rejected.empty() ? "" : ", ") +
                  name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()) + " " +
                  std::to_string(value.get<uint64_t>());
    }
  }
  out += p.bold("messages   ") + std::to_string(counters.value("messages_total", uint64_t{0})) +
         " received, " + std::to_string(counters.value("reports_stored_total", uint64_t{0})) +
         " reports stored, " + std::to_string(counters.value("rejected_total", uint64_t{0})) +
         " rejected" + (rejected.empty() ? "" : " (" + rejected + ")") + "\n";
  return out;
}

}  // namespace dancemoe::cli
