#include "scheduler/cli/cluster/scheduler_client.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/net/endpoint.h"
#include "common/net/zmq_transport.h"
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
  zmq::context_t context(1);
  net::SocketOptions socket_options;
  socket_options.send_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::ceil(options.timeout_s * 1000.0)));
  socket_options.curve = client.curve;
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t socket,
                        net::make_socket(context, zmq::socket_type::dealer, socket_options));
  DMOE_RETURN_IF_ERROR(net::connect(socket, client.scheduler).with_context("--scheduler"));
  proto::Envelope request;
  request.cluster_id = options.cluster_id;
  request.sender = "dancemoe-cli";
  request.sequence = 1;
  request.body = proto::StatusRequest{what, arguments.dump()};
  const std::string unreachable =
      "no answer from the scheduler at " + client.scheduler + " within " +
      [&] {
        std::ostringstream s;
        s << options.timeout_s;
        return s.str();
      }() +
      " s (is dancemoe-scheduler running there? see --scheduler and --timeout" +
      (client.curve ? "; a scheduler that does not admit the key " + client.key_file +
                          ", or whose key is not --scheduler-key, never answers)"
                    : "; a scheduler with keys never answers --insecure)");
  if (!net::send_message(socket, request).is_ok()) return unavailable(unreachable);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return unavailable(unreachable);
    std::optional<net::ReceivedMessage> reply =
        net::receive_message(socket, left, /*router=*/false);
    if (!reply) return unavailable(unreachable);
    if (!reply->envelope.is_ok()) {
      return unavailable("the scheduler's answer could not be read: " +
                         reply->envelope.status().message());
    }
    const proto::Envelope& env = *reply->envelope;
    if (const auto* error = std::get_if<proto::Error>(&env.body)) {
      return Status(error->code, error->message);
    }
    if (const auto* status = std::get_if<proto::StatusReply>(&env.body)) {
      nlohmann::json json = nlohmann::json::parse(status->json, nullptr, false);
      if (json.is_discarded()) return internal_error("the scheduler answered with invalid JSON");
      return json;
    }
    // Anything else is not for us; keep waiting for the answer.
  }
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
