#include "common/net/zmq_transport.h"

#include <zmq_addon.hpp>

namespace dancemoe::net {
namespace {

// ZMQ_ZAP_ENFORCE_DOMAIN (a draft option in libzmq 4.3): without it a CURVE
// server whose context has no ZAP handler admits every client. Set where
// the library knows it; receivers check sender_key per message regardless.
constexpr int kZapEnforceDomain = 93;

void apply_curve(zmq::socket_t& socket, const CurveOptions& curve) {
  if (curve.server_key.empty()) {
    socket.set(zmq::sockopt::curve_server, 1);
    socket.set(zmq::sockopt::curve_secretkey, curve.own.secret_key);
    socket.set(zmq::sockopt::zap_domain, "dancemoe");
    const int enforce = 1;
    (void)zmq_setsockopt(socket.handle(), kZapEnforceDomain, &enforce, sizeof enforce);
  } else {
    socket.set(zmq::sockopt::curve_serverkey, curve.server_key);
    socket.set(zmq::sockopt::curve_publickey, curve.own.public_key);
    socket.set(zmq::sockopt::curve_secretkey, curve.own.secret_key);
  }
}

// The ZAP User-Id of a received frame, or empty (a plain connection).
std::string user_id_of(zmq::message_t& frame) {
  const char* value = zmq_msg_gets(frame.handle(), "User-Id");
  return value != nullptr ? std::string(value) : std::string();
}

}  // namespace

Result<zmq::socket_t> make_socket(zmq::context_t& context, zmq::socket_type type,
                                  const SocketOptions& options) {
  try {
    zmq::socket_t socket(context, type);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
    socket.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
    socket.set(zmq::sockopt::rcvhwm, options.receive_high_water_mark);
    socket.set(zmq::sockopt::sndtimeo, static_cast<int>(options.send_timeout.count()));
    if (type == zmq::socket_type::router) socket.set(zmq::sockopt::router_mandatory, 1);
    if (!options.routing_id.empty()) socket.set(zmq::sockopt::routing_id, options.routing_id);
    if (options.immediate) socket.set(zmq::sockopt::immediate, 1);
    if (options.reconnect_ms > 0) socket.set(zmq::sockopt::reconnect_ivl, options.reconnect_ms);
    if (options.reconnect_max_ms > 0) {
      socket.set(zmq::sockopt::reconnect_ivl_max, options.reconnect_max_ms);
    }
    if (options.curve) {
      DMOE_RETURN_IF_ERROR(require_curve());
      apply_curve(socket, *options.curve);
    }
    return socket;
  } catch (const zmq::error_t& e) {
    return unavailable(std::string("cannot create ZeroMQ socket: ") + e.what());
  }
}

Status send_frame(zmq::socket_t& socket, std::span<const uint8_t> frame) {
  try {
    if (!socket.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::none)) {
      return unavailable("send timed out");
    }
    return Status::ok();
  } catch (const zmq::error_t& e) {
    return unavailable(std::string("send failed: ") + e.what());
  }
}

Result<bool> relay_message(zmq::socket_t& from, zmq::socket_t& to) {
  std::vector<zmq::message_t> frames;
  try {
    if (!zmq::recv_multipart(from, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      return false;
    }
    zmq::send_multipart(to, frames);
    return true;
  } catch (const zmq::error_t& e) {
    return unavailable(std::string("message not relayed: ") + e.what());
  }
}

Status bind(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.bind(endpoint);
    return Status::ok();
  } catch (const zmq::error_t& e) {
    return unavailable("cannot bind " + endpoint + ": " + e.what());
  }
}

Status connect(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.connect(endpoint);
    return Status::ok();
  } catch (const zmq::error_t& e) {
    return invalid_argument("cannot connect to " + endpoint + ": " + e.what());
  }
}

std::string last_endpoint(zmq::socket_t& socket) { return socket.get(zmq::sockopt::last_endpoint); }

Status send_message(zmq::socket_t& socket, const proto::Envelope& envelope,
                    std::span<const uint8_t> payload, std::string_view routing_id) {
  const std::vector<uint8_t> bytes = proto::encode(envelope);
  try {
    if (!routing_id.empty()) {
      if (!socket.send(zmq::buffer(routing_id.data(), routing_id.size()),
                       zmq::send_flags::sndmore)) {
        return deadline_exceeded("send timed out");
      }
    }
    const auto more = payload.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore;
    if (!socket.send(zmq::buffer(bytes.data(), bytes.size()), more)) {
      return deadline_exceeded("send timed out");
    }
    if (!payload.empty() &&
        !socket.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none)) {
      return deadline_exceeded("send timed out");
    }
    return Status::ok();
  } catch (const zmq::error_t& e) {
    // EHOSTUNREACH on a ROUTER: the peer is gone.
    return unavailable(std::string("send failed: ") + e.what());
  }
}

std::optional<ReceivedMessage> receive_message(zmq::socket_t& socket,
                                               std::chrono::milliseconds timeout, bool router,
                                               const proto::DecodeLimits& limits) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  try {
    if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
    std::vector<zmq::message_t> frames;
    // Bounded: a message with more frames than any valid layout is drained
    // and refused rather than collected.
    constexpr size_t kMaxFrames = 8;
    zmq::message_t frame;
    bool more = true;
    while (more) {
      if (!socket.recv(frame, zmq::recv_flags::none)) return std::nullopt;
      more = frame.more();
      if (frames.size() < kMaxFrames) frames.push_back(std::move(frame));
    }
    ReceivedMessage out;
    size_t next = 0;
    if (router) out.routing_id = frames[next++].to_string();
    const size_t n_body_frames = frames.size() - next;
    if (n_body_frames < 1 || n_body_frames > 2) {
      out.envelope =
          invalid_argument("expected an envelope frame and at most one payload frame, got " +
                           std::to_string(n_body_frames) + " frames");
      return out;
    }
    zmq::message_t& env = frames[next];
    out.sender_key = user_id_of(env);
    const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(env.data()), env.size());
    out.envelope = proto::decode(bytes, limits);
    if (out.envelope.is_ok()) {
      out.sequence = out.envelope->sequence;
    } else {
      out.sequence = proto::peek_sequence(bytes, limits).value_or(0);
    }
    if (n_body_frames == 2) {
      const auto* p = static_cast<const uint8_t*>(frames[next + 1].data());
      out.payload.assign(p, p + frames[next + 1].size());
    }
    return out;
  } catch (const zmq::error_t& e) {
    ReceivedMessage out;
    out.envelope = unavailable(std::string("receive failed: ") + e.what());
    return out;
  }
}

}  // namespace dancemoe::net
