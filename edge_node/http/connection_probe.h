// ConnectionProbe: tells whether the HTTP client of the request being
// handled has gone away, so its generation can be cancelled promptly.
//
// Why this exists: the cpp-httplib packaged by Debian 12 (0.11.4) predates
// Request::is_connection_closed() and gives handlers no socket. The probe
// finds the request's socket once -- the descriptor of this process whose
// local and peer addresses are the request's -- and then polls it:
// POLLRDHUP / POLLHUP / POLLERR mean the client closed (or reset) the
// connection. httplib keeps that socket open until the handler returns, so
// the descriptor cannot be reused meanwhile. Limitation: a client that
// half-closes its sending side while still reading counts as gone (no HTTP
// client library does that for a request with a body).
//
// When the socket cannot be found (e.g. the fd table is unreadable) the
// probe reports "open" and cancellation falls back to failed writes.
// Not thread-safe; one per request.
#pragma once

#include <string>

namespace dancemoe::node {

class ConnectionProbe {
 public:
  ConnectionProbe(const std::string& local_addr, int local_port, const std::string& remote_addr,
                  int remote_port);

  bool found() const { return fd_ >= 0; }
  // True once the peer closed or reset the connection.
  bool closed();

 private:
  int fd_ = -1;
  bool closed_ = false;
};

}  // namespace dancemoe::node
