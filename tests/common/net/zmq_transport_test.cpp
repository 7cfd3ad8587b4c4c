#include "common/net/zmq_transport.h"

#include <doctest/doctest.h>

namespace dancemoe::net {
namespace {

proto::Envelope dealer_envelope(proto::Body body, uint64_t sequence) {
  proto::Envelope e;
  e.cluster_id = "test";
  e.sender = "dealer";
  e.sequence = sequence;
  e.body = std::move(body);
  return e;
}

}  // namespace

TEST_CASE("zmq transport: envelope and payload travel DEALER to ROUTER and back over TCP") {
  zmq::context_t context;
  auto router = make_socket(context, zmq::socket_type::router);
  auto dealer = make_socket(context, zmq::socket_type::dealer);
  REQUIRE(router.is_ok());
  REQUIRE(dealer.is_ok());
  REQUIRE(bind(*router, "tcp://127.0.0.1:*").is_ok());
  const std::string endpoint = last_endpoint(*router);
  CHECK(endpoint.rfind("tcp://127.0.0.1:", 0) == 0);
  REQUIRE(connect(*dealer, endpoint).is_ok());

  const std::vector<uint8_t> payload = {1, 2, 3, 4, 5, 6, 7, 8};
  proto::ExpertCall call;
  call.n_tokens = 1;
  call.hidden = 4;
  call.assignments = {{0, 3, 1.0f}};
  REQUIRE(send_message(*dealer, dealer_envelope(call, 7), payload).is_ok());
  auto received = receive_message(*router, std::chrono::seconds(5), /*router=*/true);
  REQUIRE(received.has_value());
  REQUIRE(received->envelope.is_ok());
  CHECK(received->envelope->sequence == 7);
  CHECK(std::holds_alternative<proto::ExpertCall>(received->envelope->body));
  CHECK(received->payload == payload);
  CHECK_FALSE(received->routing_id.empty());

  REQUIRE(
      send_message(*router, dealer_envelope(proto::Ack{7}, 1), {}, received->routing_id).is_ok());
  auto reply = receive_message(*dealer, std::chrono::seconds(5), /*router=*/false);
  REQUIRE(reply.has_value());
  REQUIRE(reply->envelope.is_ok());
  CHECK(std::get<proto::Ack>(reply->envelope->body).sequence == 7);
}

TEST_CASE("zmq transport: a timeout is an empty result and garbage frames are reported") {
  zmq::context_t context;
  auto router = make_socket(context, zmq::socket_type::router);
  auto dealer = make_socket(context, zmq::socket_type::dealer);
  REQUIRE(bind(*router, "inproc://garbage").is_ok());
  REQUIRE(connect(*dealer, "inproc://garbage").is_ok());
  CHECK_FALSE(receive_message(*router, std::chrono::milliseconds(10), true).has_value());

  const std::string junk = "definitely not a flatbuffer";
  dealer->send(zmq::buffer(junk), zmq::send_flags::none);
  auto bad = receive_message(*router, std::chrono::seconds(5), true);
  REQUIRE(bad.has_value());
  CHECK_FALSE(bad->envelope.is_ok());
  CHECK_FALSE(bad->routing_id.empty());

  for (int i = 0; i < 4; ++i) dealer->send(zmq::buffer(junk), zmq::send_flags::sndmore);
  dealer->send(zmq::buffer(junk), zmq::send_flags::none);
  auto many = receive_message(*router, std::chrono::seconds(5), true);
  REQUIRE(many.has_value());
  CHECK(many->envelope.status().message() ==
        "expected an envelope frame and at most one payload frame, got 5 frames");
}

TEST_CASE("zmq transport: binding a bad endpoint is an error, not an exception") {
  zmq::context_t context;
  auto socket = make_socket(context, zmq::socket_type::router);
  REQUIRE(socket.is_ok());
  Status s = bind(*socket, "tcp://not-an-endpoint");
  CHECK_FALSE(s.is_ok());
  CHECK(s.message().find("cannot bind tcp://not-an-endpoint") == 0);
}

}  // namespace dancemoe::net
