// `dancemoe nodes`: every node the scheduler knows -- state, endpoints,
// devices (experts held, expert memory and load bandwidth), experts held in the committed
// placement, measured local and remote expert-call latencies and the
// local-hit ratio since adoption.
//
//   dancemoe nodes [--scheduler tcp://HOST:PORT] [--timeout S] [--json]
#include <string>

#include "scheduler/cli/cluster/cluster_format.h"
#include "scheduler/cli/cluster/scheduler_client.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

using nlohmann::json;

std::string latency_text(const json& us) {
  if (!us.is_number()) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.0f us", us.get<double>());
  return buffer;
}

std::string format_nodes(const json& reply) {
  const Palette p{use_colour()};
  std::vector<std::vector<std::string>> rows = {{"NODE", "STATE", "SEEN", "EXPERTS", "MEMORY",
                                                 "DEVICES", "LOCAL", "REMOTE", "HIT SINCE",
                                                 "VERSION", "ENDPOINT"}};
  size_t i = 0;
  for (const json& n : reply["nodes"]) {
    double memory = 0.0;
    std::string devices;
    for (const json& d : n["devices"]) {
      memory += d.value("budget_bytes", 0.0);
      devices += (devices.empty() ? "" : ", ") + d.value("name", std::string()) + " " +
                 std::to_string(d.value("experts", int64_t{0})) + " experts @ " +
                 bytes_text(d.value("load_bytes_per_s", 0.0)) + "/s";
    }
    const std::string state = n.value("state", std::string());
    rows.push_back(
        {p.node(i++, n.value("id", std::string())), state == "up" ? state : p.warn(state),
         n["last_seen_s_ago"].is_number()
             ? duration_text(n["last_seen_s_ago"].get<double>()) + " ago"
             : "-",
         std::to_string(n.value("experts_held", 0)), bytes_text(memory),
         devices.empty() ? "-" : devices, latency_text(n["local_mean_latency_us"]),
         latency_text(n["remote_mean_latency_us"]), ratio_text(n["local_hit_ratio_since_adoption"]),
         std::to_string(n.value("placement_version", uint64_t{0})),
         n.value("expert_endpoint", std::string())});
  }
  if (rows.size() == 1) return "no node has registered yet\n";
  return table(rows, "");
}

void setup(CLI::App& root, int* exit_code) {
  auto options = std::make_shared<ClusterOptions>();
  CLI::App* command = root.add_subcommand(
      "nodes", "Nodes known to a running scheduler, with devices and latencies");
  add_cluster_options(command, options.get());
  command->callback([options, exit_code] {
    *exit_code = run_cluster_query("nodes", *options, "nodes", json::object(), format_nodes);
  });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
