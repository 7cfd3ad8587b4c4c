// The `dancemoe` CLI's connection to a running scheduler: one StatusRequest
// on a DEALER socket, one reply (StatusReply JSON or Error), bounded by a
// timeout. Shared options for the cluster commands (status, nodes,
// placement, migrations): --scheduler, --key, --scheduler-key, --insecure
// (resolved with the environment and the config file, client_settings.h),
// --timeout, --cluster-id, --json.
//
// Errors: an unreachable scheduler is `unavailable` with a message naming
// the endpoint and the timeout (a scheduler that does not admit our key
// answers nothing, so the message says that too); an Error reply keeps its
// code and message.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/base/status.h"
#include "scheduler/cli/cluster/client_settings.h"

namespace dancemoe::cli {

struct ClusterOptions {
  ClientFlags client;  // scheduler endpoint and keys, as the flags gave them
  double timeout_s = 5.0;
  // Empty: the scheduler accepts a status request from any cluster id.
  std::string cluster_id;
  bool json = false;
};

// Adds --scheduler, --key, --scheduler-key, --insecure, --timeout,
// --cluster-id and --json to a command.
void add_cluster_options(CLI::App* command, ClusterOptions* options);

Result<nlohmann::json> query_scheduler(const ClusterOptions& options, const std::string& what,
                                       const nlohmann::json& arguments = nlohmann::json::object());

// Runs a query and prints it: raw JSON with --json, else `format(reply)`.
// Returns the exit code (0, or the failure's code after printing
// "dancemoe <command>: <message>" on stderr).
int run_cluster_query(const std::string& command, const ClusterOptions& options,
                      const std::string& what, const nlohmann::json& arguments,
                      std::string (*format)(const nlohmann::json& reply));

}  // namespace dancemoe::cli
