#include "scheduler/cli/cluster/scheduler_client.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/net/status_request.h"
#include "scheduler/cli/cli_support.h"

namespace dancemoe::cli {

void add_cluster_options(CLI::App* command, ClusterOptions* options) {
  command->add_option("--scheduler", options->client.scheduler,
                      "Scheduler control endpoint, tcp://HOST:PORT (default: $DANCEMOE_SCHEDULER, "
                      "cli.toml, else tcp://127.0.0.1:5550)");
  command->add_option("--key", options->client.key,
                      "This client's CURVE secret key file, NAME.key (an operator's to change "
                      "the cluster; default: $DANCEMOE_KEY or cli.toml)");
  command->add_option("--scheduler-key", options->client.scheduler_key,
                      "The scheduler's public key file, NAME.pub (default: "
                      "$DANCEMOE_SCHEDULER_KEY or cli.toml)");
  command->add_flag("--insecure", options->client.insecure,
                    "Talk to a scheduler started with --insecure (no keys)");
  command->add_option("--timeout", options->timeout_s, "Seconds to wait for the scheduler's answer")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  command->add_option("--cluster-id", options->cluster_id,
                      "Cluster id to send (default: none, accepted by any scheduler)");
  command->add_flag("--json", options->json, "Print the scheduler's JSON answer");
}

Result<nlohmann::json> query_scheduler(const ClusterOptions& options, const std::string& what,
                                       const nlohmann::json& arguments) {
  DMOE_ASSIGN_OR_RETURN(const ClientSettings client, resolve_client_settings(options.client));
  net::StatusRequestOptions request;
  request.endpoint = client.scheduler;
  request.curve = client.curve;
  request.cluster_id = options.cluster_id;
  request.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::ceil(options.timeout_s * 1000.0)));
  std::ostringstream timeout;
  timeout << options.timeout_s;
  request.unreachable_message =
      "no answer from the scheduler at " + client.scheduler + " within " + timeout.str() +
      " s (is dancemoe-scheduler running there? see --scheduler and --timeout" +
      (client.curve ? "; a scheduler that does not admit the key " + client.key_file +
                          ", or whose key is not --scheduler-key, never answers)"
                    : "; a scheduler with keys never answers --insecure)");
  return net::request_status(request, what, arguments);
}

int run_cluster_query(const std::string& command, const ClusterOptions& options,
                      const std::string& what, const nlohmann::json& arguments,
                      std::string (*format)(const nlohmann::json& reply)) {
  Result<nlohmann::json> reply = query_scheduler(options, what, arguments);
  if (!reply.is_ok()) return report_failure(command, reply.status());
  if (options.json) {
    std::printf("%s\n",
                reply->dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fputs(format(*reply).c_str(), stdout);
  }
  return 0;
}

}  // namespace dancemoe::cli
