// Protocol messages over ZeroMQ sockets (cppzmq), the one place that knows
// the framing: [routing id (ROUTER sockets only)] [envelope] [payload?].
//
// Sockets are created with linger 0 (closing never blocks on unsent
// messages) and a maximum inbound message size, so a peer cannot make us
// allocate without bound. Receiving never throws: a timeout is an empty
// optional (an expected outcome, not an error), and a frame layout or
// envelope we cannot accept comes back as a ReceivedMessage whose
// `envelope` holds the error, with the routing id and sequence (when known)
// so the receiver can answer with an Error and count it.
//
// CURVE (docs/security.md): SocketOptions::curve makes a socket a CURVE
// server (its own key pair; clients are admitted by the context's
// ZapHandler, zap_handler.h) or a CURVE client (its key pair and the
// server's pinned public key); without it the socket is plain, which only
// --insecure asks for. A message received over CURVE names the key that sent
// it (ReceivedMessage::sender_key).
//
// Thread-safety: as ZeroMQ's -- one thread per socket.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "common/base/status.h"
#include "common/net/curve_keys.h"
#include "common/proto/codec.h"
#include "common/proto/messages.h"

namespace dancemoe::net {

struct CurveOptions {
  CurveKeyPair own;
  // A client pins the server's public key; empty makes the socket a server.
  std::string server_key;
};

struct SocketOptions {
  int64_t max_message_bytes = int64_t{256} << 20;  // ZMQ_MAXMSGSIZE
  int send_high_water_mark = 1000;
  int receive_high_water_mark = 1000;
  std::chrono::milliseconds send_timeout{5000};  // a blocked send fails after this
  std::string routing_id;                        // DEALER identity, if set
  // DEALERs to peers: queue nothing for a peer not yet connected
  // (ZMQ_IMMEDIATE), and reconnect after reconnect_ms, backing off to
  // reconnect_max_ms; 0 keeps ZeroMQ's defaults.
  bool immediate = false;
  int reconnect_ms = 0;
  int reconnect_max_ms = 0;
  std::optional<CurveOptions> curve;  // nullopt: plain (--insecure)
};

// Creates a socket with the options applied. Errors from ZeroMQ (bad
// endpoint syntax, address in use) come back as Status, not exceptions.
Result<zmq::socket_t> make_socket(zmq::context_t& context, zmq::socket_type type,
                                  const SocketOptions& options = {});
Status bind(zmq::socket_t& socket, const std::string& endpoint);
Status connect(zmq::socket_t& socket, const std::string& endpoint);
// The endpoint actually bound (resolves "tcp://127.0.0.1:*" to the port).
std::string last_endpoint(zmq::socket_t& socket);

struct ReceivedMessage {
  std::string routing_id;  // ROUTER sockets: the sender's identity frame
  Result<proto::Envelope> envelope = proto::Envelope{};  // or why it was not accepted
  // The envelope's sequence when it could be read although `envelope` holds
  // an error (a field out of range), else 0: for Error.in_reply_to.
  uint64_t sequence = 0;
  std::vector<uint8_t> payload;  // raw frame, if any
  // The Z85 public key the sender's CURVE handshake proved (the ZAP User-Id);
  // empty on a plain connection.
  std::string sender_key;
};

// Sends envelope (+ payload when non-empty), prefixed by routing_id on ROUTER sockets.
Status send_message(zmq::socket_t& socket, const proto::Envelope& envelope,
                    std::span<const uint8_t> payload = {}, std::string_view routing_id = {});

// Sends one raw frame (tests that speak malformed protocol use it).
Status send_frame(zmq::socket_t& socket, std::span<const uint8_t> frame);

// Receives one multipart message from `from` and sends it on `to` as it is
// (a proxy's hop). False when `from` had nothing; a message `to` cannot
// deliver (the ROUTER's peer went away) is dropped with a Status.
Result<bool> relay_message(zmq::socket_t& from, zmq::socket_t& to);

// Waits up to `timeout` for one message. `router`: the first frame is a routing id.
std::optional<ReceivedMessage> receive_message(zmq::socket_t& socket,
                                               std::chrono::milliseconds timeout, bool router,
                                               const proto::DecodeLimits& limits = {});

}  // namespace dancemoe::net
