#include "common/net/port_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/base/unique_fd.h"

namespace dancemoe::net {

Status check_tcp_port_free(const std::string& what, const std::string& host, int port) {
  if (port == 0) return Status::ok();
  const std::string shown = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const bool any = host.empty() || host == "*" || host == "0.0.0.0";
  const int rc =
      ::getaddrinfo(any ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    return unavailable(what + " " + shown + ": '" + host + "' is not an address of this host (" +
                       ::gai_strerror(rc) + ")");
  }
  Status result = Status::ok();
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
    if (!fd.valid()) continue;
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      result = Status::ok();
      break;
    }
    const int error = errno;
    result = unavailable(what + " " + shown + ": " +
                         (error == EADDRINUSE
                              ? std::string("the port is in use by another process (another "
                                            "node or scheduler?): stop it or choose another port")
                          : error == EADDRNOTAVAIL ? "'" + host + "' is not an address of this host"
                                                   : std::string(std::strerror(error))));
  }
  ::freeaddrinfo(found);
  return result;
}

}  // namespace dancemoe::net
