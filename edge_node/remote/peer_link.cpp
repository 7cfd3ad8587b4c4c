#include "edge_node/remote/peer_link.h"

namespace dancemoe::node {

Result<std::unique_ptr<PeerLink>> PeerLink::connect(zmq::context_t& context, PeerAddress peer,
                                                    std::chrono::milliseconds send_timeout,
                                                    int64_t max_message_bytes) {
  net::SocketOptions options;
  options.curve = peer.curve;
  options.send_timeout = send_timeout;
  options.max_message_bytes = max_message_bytes;
  options.immediate = true;
  // Reconnect quickly after a peer restarts, but do not hammer a dead one.
  options.reconnect_ms = 100;
  options.reconnect_max_ms = 2000;
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t socket,
                        net::make_socket(context, zmq::socket_type::dealer, options));
  DMOE_RETURN_IF_ERROR(net::connect(socket, peer.endpoint)
                           .with_context("peer '" + peer.node_id + "' expert endpoint"));
  return std::unique_ptr<PeerLink>(new PeerLink(std::move(peer), std::move(socket)));
}

Status PeerLink::send(const proto::Envelope& envelope, std::span<const uint8_t> payload) {
  Status s = net::send_message(socket_, envelope, payload);
  if (!s.is_ok()) {
    return unavailable("peer '" + node_id_ + "' (" + endpoint_ +
                       ") is not reachable: " + s.message());
  }
  return s;
}

std::optional<net::ReceivedMessage> PeerLink::receive(std::chrono::milliseconds timeout) {
  return net::receive_message(socket_, timeout, /*router=*/false);
}

}  // namespace dancemoe::node
