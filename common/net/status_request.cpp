#include "common/net/status_request.h"

#include "common/base/json_nesting.h"

namespace dancemoe::net {

Result<nlohmann::json> request_status(const StatusRequestOptions& options, const std::string& what,
                                      const nlohmann::json& arguments) {
  zmq::context_t context(1);
  SocketOptions socket_options;
  socket_options.send_timeout = options.timeout;
  socket_options.curve = options.curve;
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t socket,
                        make_socket(context, zmq::socket_type::dealer, socket_options));
  DMOE_RETURN_IF_ERROR(connect(socket, options.endpoint));
  proto::Envelope request;
  request.cluster_id = options.cluster_id;
  request.sender = options.sender;
  request.sequence = 1;
  request.body = proto::StatusRequest{what, arguments.dump()};
  if (!send_message(socket, request).is_ok()) return unavailable(options.unreachable_message);
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return unavailable(options.unreachable_message);
    std::optional<ReceivedMessage> reply = receive_message(socket, left, /*router=*/false);
    if (!reply) return unavailable(options.unreachable_message);
    if (!reply->envelope.is_ok()) {
      return unavailable("the scheduler's answer could not be read: " +
                         reply->envelope.status().message());
    }
    const proto::Envelope& env = *reply->envelope;
    if (const auto* error = std::get_if<proto::Error>(&env.body)) {
      return Status(error->code, error->message);
    }
    if (const auto* status = std::get_if<proto::StatusReply>(&env.body)) {
      DMOE_RETURN_IF_ERROR(check_json_nesting(status->json, "the scheduler's answer"));
      nlohmann::json json = nlohmann::json::parse(status->json, nullptr, false);
      if (json.is_discarded()) return internal_error("the scheduler answered with invalid JSON");
      return json;
    }
    // Anything else is not for us; keep waiting for the answer.
  }
}

}  // namespace dancemoe::net
