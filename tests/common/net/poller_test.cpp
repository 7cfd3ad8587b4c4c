#include "common/net/poller.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include "common/net/zmq_transport.h"

namespace dancemoe::net {

TEST_CASE("poller: a timeout is false, a waiting message marks only its socket readable") {
  zmq::context_t context(1);
  Result<zmq::socket_t> server = make_socket(context, zmq::socket_type::pair);
  Result<zmq::socket_t> client = make_socket(context, zmq::socket_type::pair);
  Result<zmq::socket_t> idle = make_socket(context, zmq::socket_type::pair);
  REQUIRE(server.is_ok());
  REQUIRE(client.is_ok());
  REQUIRE(idle.is_ok());
  REQUIRE(bind(*server, "inproc://poller-test").is_ok());
  REQUIRE(connect(*client, "inproc://poller-test").is_ok());
  REQUIRE(bind(*idle, "inproc://poller-idle").is_ok());

  Poller poller;
  const size_t s = poller.add(*server);
  const size_t i = poller.add(*idle);
  CHECK(poller.size() == 2);
  Result<bool> nothing = poller.wait(std::chrono::milliseconds(10));
  REQUIRE(nothing.is_ok());
  CHECK_FALSE(*nothing);
  CHECK_FALSE(poller.readable(s));

  const std::vector<uint8_t> frame = {1, 2, 3};
  REQUIRE(send_frame(*client, frame).is_ok());
  Result<bool> ready = poller.wait(std::chrono::milliseconds(1000));
  REQUIRE(ready.is_ok());
  CHECK(*ready);
  CHECK(poller.readable(s));
  CHECK_FALSE(poller.readable(i));
  // A negative timeout does not block.
  CHECK(poller.wait(std::chrono::milliseconds(-5)).is_ok());
}

TEST_CASE("poller: a file descriptor beside a socket wakes the wait when it becomes readable") {
  zmq::context_t context(1);
  Result<zmq::socket_t> socket = make_socket(context, zmq::socket_type::pair);
  REQUIRE(socket.is_ok());
  REQUIRE(bind(*socket, "inproc://poller-fd").is_ok());
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  Poller poller;
  const size_t s = poller.add(*socket);
  const size_t f = poller.add_fd(fds[0]);
  Result<bool> nothing = poller.wait(std::chrono::milliseconds(10));
  REQUIRE(nothing.is_ok());
  CHECK_FALSE(*nothing);
  REQUIRE(::write(fds[1], "x", 1) == 1);
  Result<bool> ready = poller.wait(std::chrono::milliseconds(1000));
  REQUIRE(ready.is_ok());
  CHECK(*ready);
  CHECK(poller.readable(f));
  CHECK_FALSE(poller.readable(s));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("transport: relay_message forwards a multipart message as it is") {
  zmq::context_t context(1);
  Result<zmq::socket_t> a = make_socket(context, zmq::socket_type::pair);
  Result<zmq::socket_t> b = make_socket(context, zmq::socket_type::pair);
  Result<zmq::socket_t> c = make_socket(context, zmq::socket_type::pair);
  Result<zmq::socket_t> d = make_socket(context, zmq::socket_type::pair);
  REQUIRE((a.is_ok() && b.is_ok() && c.is_ok() && d.is_ok()));
  REQUIRE(bind(*a, "inproc://relay-in").is_ok());
  REQUIRE(connect(*b, "inproc://relay-in").is_ok());
  REQUIRE(bind(*c, "inproc://relay-out").is_ok());
  REQUIRE(connect(*d, "inproc://relay-out").is_ok());
  Result<bool> empty = relay_message(*a, *c);
  REQUIRE(empty.is_ok());
  CHECK_FALSE(*empty);
  const std::vector<uint8_t> frame = {7, 8};
  REQUIRE(send_frame(*b, frame).is_ok());
  Poller poller;
  poller.add(*a);
  REQUIRE(*poller.wait(std::chrono::milliseconds(1000)));
  Result<bool> relayed = relay_message(*a, *c);
  REQUIRE(relayed.is_ok());
  CHECK(*relayed);
  zmq::message_t got;
  REQUIRE(d->recv(got, zmq::recv_flags::none));
  CHECK(got.size() == 2);
  CHECK(static_cast<const uint8_t*>(got.data())[1] == 8);
}

}  // namespace dancemoe::net
