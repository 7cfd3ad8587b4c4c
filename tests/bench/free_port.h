// A TCP port on 127.0.0.1 that was free a moment ago, for benchmarks that
// start processes with fixed ports (a placement names every node's expert
// endpoint before the nodes start). The kernel picks it (bind to port 0);
// another process may take it before ours binds, which a benchmark reports
// as a node that failed to start.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dancemoe::bench {

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace dancemoe::bench
