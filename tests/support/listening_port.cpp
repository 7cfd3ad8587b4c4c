#include "tests/support/listening_port.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dancemoe::testing {

ListeningPort::ListeningPort() {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd_ >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd_, 1) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  port_ = ntohs(addr.sin_port);
}

ListeningPort::~ListeningPort() { close(); }

void ListeningPort::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace dancemoe::testing
