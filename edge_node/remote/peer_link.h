// PeerLink: this node's DEALER socket to one peer's expert service, with
// what it has measured about that peer (PeerEstimate).
//
// The socket has ZMQ_IMMEDIATE set: messages are queued only on a live
// connection, so a send to a peer that died fails at once (instead of
// sitting in a queue to be delivered to its next incarnation), and a short
// send timeout bounds the wait for a connection being set up.
//
// With CURVE the link pins the peer's member key (member_keys.h): only the
// node holding that key's secret can answer.
//
// Not thread-safe: one owner thread (the executor's), as the socket.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <zmq.hpp>

#include "common/base/status.h"
#include "common/net/zmq_transport.h"
#include "edge_node/remote/peer_estimate.h"

namespace dancemoe::node {

// Where a link goes: the peer's node id and expert endpoint, and the CURVE
// options that pin its key (nullopt: plain, --insecure).
struct PeerAddress {
  std::string node_id;
  std::string endpoint;
  std::optional<net::CurveOptions> curve;
};

class PeerLink {
 public:
  static Result<std::unique_ptr<PeerLink>> connect(zmq::context_t& context, PeerAddress peer,
                                                   std::chrono::milliseconds send_timeout,
                                                   int64_t max_message_bytes);

  const std::string& node_id() const { return node_id_; }
  const std::string& endpoint() const { return endpoint_; }
  // The pinned key (empty when plain).
  const std::string& server_key() const { return server_key_; }
  zmq::socket_t& socket() { return socket_; }
  PeerEstimate& estimate() { return estimate_; }

  Status send(const proto::Envelope& envelope, std::span<const uint8_t> payload);
  // One message if one is waiting (or arrives within `timeout`).
  std::optional<net::ReceivedMessage> receive(std::chrono::milliseconds timeout);

 private:
  PeerLink(PeerAddress peer, zmq::socket_t socket)
      : node_id_(std::move(peer.node_id)),
        endpoint_(std::move(peer.endpoint)),
        server_key_(peer.curve ? peer.curve->server_key : std::string()),
        socket_(std::move(socket)) {}

  std::string node_id_;
  std::string endpoint_;
  std::string server_key_;
  zmq::socket_t socket_;
  PeerEstimate estimate_;
};

}  // namespace dancemoe::node
