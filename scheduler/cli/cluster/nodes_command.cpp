// `dancemoe nodes`: every node the scheduler knows -- state, endpoints,
// devices (experts held, expert memory and load bandwidth), experts held in the committed
// placement, measured local and remote expert-call latencies and the
// local-hit ratio since adoption -- and, with an operator key, changes to
// who may be a node (docs/security.md):
//
//   dancemoe nodes [--scheduler tcp://HOST:PORT] [--timeout S] [--json]
//   dancemoe nodes admit FILE.pub [--name NAME]   admit a node key (NAME: the file's stem);
//                                                 written to the scheduler's --nodes-keys
//   dancemoe nodes revoke NAME                    remove a node key: its node is down at once,
//                                                 its calls refused within a heartbeat
//   dancemoe nodes forget ID                      forget a node that is down (its record and
//                                                 the key binding of its id)
// All take --key/--scheduler-key (client_settings.h), --timeout, --json.
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/net/curve_keys.h"
#include "scheduler/cli/cli_support.h"
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
                                                 "VERSION", "ENDPOINT", "KEY"}};
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
         n.value("expert_endpoint", std::string()),
         n["key"].is_string() ? n["key"].get<std::string>() : "-"});
  }
  if (rows.size() == 1) return "no node has registered yet\n";
  return table(rows, "");
}

struct AdminOptions {
  ClusterOptions cluster;
  std::string argument;  // FILE.pub, NAME or ID
  std::string name;      // admit --name
};

int run_admin(const std::string& what, const AdminOptions& o) {
  json args;
  if (what == "admit") {
    Result<std::string> key = net::read_public_key_file(o.argument);
    if (!key.is_ok()) return report_failure("nodes admit", key.status());
    const std::string name =
        o.name.empty() ? std::filesystem::path(o.argument).stem().string() : o.name;
    args = {{"name", name}, {"public_key", *key}};
  } else if (what == "revoke") {
    args = {{"name", o.argument}};
  } else {
    args = {{"node_id", o.argument}};
  }
  return run_cluster_query("nodes " + what, o.cluster, what, args, [](const json& reply) {
    if (reply.contains("admitted")) {
      return "admitted node key '" + reply["admitted"].get<std::string>() + "'\n";
    }
    if (reply.contains("revoked")) {
      return "revoked node key '" + reply["revoked"].get<std::string>() + "'" +
             (reply["node_id"].is_string()
                  ? "; node '" + reply["node_id"].get<std::string>() + "' is down"
                  : std::string()) +
             "\n";
    }
    return "forgot node '" + reply.value("forgotten", std::string()) + "'\n";
  });
}

void add_admin(CLI::App* nodes, const std::string& what, const std::string& help,
               const std::string& argument_help, int* exit_code) {
  auto o = std::make_shared<AdminOptions>();
  CLI::App* command = nodes->add_subcommand(what, help);
  command
      ->add_option(what == "admit"    ? "file"
                   : what == "revoke" ? "name"
                                      : "id",
                   o->argument, argument_help)
      ->required();
  if (what == "admit") {
    command->add_option("--name", o->name, "name of the key (default: the file name's stem)");
  }
  add_cluster_options(command, &o->cluster);
  command->callback([what, o, exit_code] { *exit_code = run_admin(what, *o); });
}

void setup(CLI::App& root, int* exit_code) {
  auto options = std::make_shared<ClusterOptions>();
  CLI::App* command = root.add_subcommand(
      "nodes",
      "Nodes known to a running scheduler, with devices and latencies; admit, revoke, "
      "forget (operator key)");
  command->require_subcommand(0, 1);
  add_cluster_options(command, options.get());
  add_admin(command, "admit", "Admit a node's public key (operator key needed)",
            "the node's NAME.pub", exit_code);
  add_admin(command, "revoke",
            "Revoke a node key: its node is down at once and its calls are refused",
            "the key's name", exit_code);
  add_admin(command, "forget", "Forget a node that is down, releasing its id", "the node id",
            exit_code);
  command->callback([command, options, exit_code] {
    if (!command->get_subcommands().empty()) return;  // a subcommand ran
    *exit_code = run_cluster_query("nodes", *options, "nodes", json::object(), format_nodes);
  });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
