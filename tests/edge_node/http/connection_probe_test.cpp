#include "edge_node/http/connection_probe.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dancemoe::node {
namespace {

int port_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (peer) {
    REQUIRE(::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  } else {
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  }
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("connection probe: finds the accepted socket and sees the client close it") {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const int server = ::accept(listener, nullptr, nullptr);
  REQUIRE(server >= 0);

  ConnectionProbe probe("127.0.0.1", port_of(server, false), "127.0.0.1", port_of(server, true));
  CHECK(probe.found());
  CHECK_FALSE(probe.closed());
  REQUIRE(::write(client, "GET", 3) == 3);  // pending request bytes are not a close
  CHECK_FALSE(probe.closed());
  ::close(client);
  CHECK(probe.closed());

  ConnectionProbe nobody("127.0.0.1", port_of(server, false), "127.0.0.1", 1);
  CHECK_FALSE(nobody.found());
  CHECK_FALSE(nobody.closed());  // unknown: cancellation falls back to failed writes
  ::close(server);
  ::close(listener);
}

}  // namespace dancemoe::node
