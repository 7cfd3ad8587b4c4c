#include "common/net/zap_handler.h"

#include <doctest/doctest.h>

#include "common/net/zmq_transport.h"

namespace dancemoe::net {
namespace {

proto::Envelope client_envelope(proto::Body body, uint64_t sequence) {
  proto::Envelope e;
  e.cluster_id = "test";
  e.sender = "client";
  e.sequence = sequence;
  e.body = std::move(body);
  return e;
}

struct Server {
  zmq::context_t context;
  std::shared_ptr<KeyAllowlist> allowed = std::make_shared<KeyAllowlist>();
  std::unique_ptr<ZapHandler> zap;
  CurveKeyPair keys = *generate_key_pair();
  zmq::socket_t router;
  std::string endpoint;

  Server() {
    auto handler = ZapHandler::start(context, allowed);
    REQUIRE(handler.is_ok());
    zap = std::move(*handler);
    SocketOptions options;
    options.curve = CurveOptions{keys, {}};
    auto socket = make_socket(context, zmq::socket_type::router, options);
    REQUIRE(socket.is_ok());
    router = std::move(*socket);
    REQUIRE(bind(router, "tcp://127.0.0.1:*").is_ok());
    endpoint = last_endpoint(router);
  }
};

// A client's DEALER in its own context; `server_key` pinned.
struct Client {
  zmq::context_t context;
  zmq::socket_t dealer;
  Client(const std::string& endpoint, std::optional<CurveOptions> curve) {
    SocketOptions options;
    options.curve = std::move(curve);
    auto socket = make_socket(context, zmq::socket_type::dealer, options);
    REQUIRE(socket.is_ok());
    dealer = std::move(*socket);
    REQUIRE(connect(dealer, endpoint).is_ok());
  }
  void send(uint64_t sequence) {
    (void)send_message(dealer, client_envelope(proto::Heartbeat{}, sequence));
  }
};

}  // namespace

TEST_CASE("zap: an admitted key connects and every message names it -- others get nothing") {
  Server server;
  const CurveKeyPair member = *generate_key_pair();
  const CurveKeyPair stranger = *generate_key_pair();
  server.allowed->replace({member.public_key});

  Client good(server.endpoint, CurveOptions{member, server.keys.public_key});
  good.send(1);
  auto received = receive_message(server.router, std::chrono::seconds(5), /*router=*/true);
  REQUIRE(received.has_value());
  REQUIRE(received->envelope.is_ok());
  CHECK(received->sender_key == member.public_key);

  // An unknown key, a plain client, and a client pinning the wrong server
  // key: no connection, so nothing arrives.
  Client unknown(server.endpoint, CurveOptions{stranger, server.keys.public_key});
  Client plain(server.endpoint, std::nullopt);
  Client wrong_pin(server.endpoint, CurveOptions{member, stranger.public_key});
  unknown.send(2);
  plain.send(3);
  wrong_pin.send(4);
  CHECK_FALSE(receive_message(server.router, std::chrono::milliseconds(500), true).has_value());
  CHECK(server.zap->denied() >= 1);

  // Revoking does not close the live connection: receivers see the key on
  // each message and check it against the list (here: no longer there).
  server.allowed->replace({});
  good.send(5);
  received = receive_message(server.router, std::chrono::seconds(5), true);
  REQUIRE(received.has_value());
  CHECK(received->sender_key == member.public_key);
  CHECK_FALSE(server.allowed->contains(received->sender_key));
  // A new connection with the revoked key is denied.
  Client again(server.endpoint, CurveOptions{member, server.keys.public_key});
  again.send(6);
  CHECK_FALSE(receive_message(server.router, std::chrono::milliseconds(500), true).has_value());
}

TEST_CASE("zap: a plain socket's messages carry no sender key") {
  zmq::context_t context;
  auto router = make_socket(context, zmq::socket_type::router);
  REQUIRE(router.is_ok());
  REQUIRE(bind(*router, "tcp://127.0.0.1:*").is_ok());
  Client plain(last_endpoint(*router), std::nullopt);
  plain.send(1);
  auto received = receive_message(*router, std::chrono::seconds(5), true);
  REQUIRE(received.has_value());
  CHECK(received->sender_key.empty());
}

}  // namespace dancemoe::net
