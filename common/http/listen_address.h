// Where an HTTP server listens: "HOST:PORT" as the --http flags of the node
// and the scheduler take it (port 0: any free port), and whether that host
// is reachable only from this machine.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/base/status.h"

namespace dancemoe::http {

struct ListenAddress {
  std::string host;  // as given: "127.0.0.1", "0.0.0.0", "::1", "localhost"
  int port = 0;      // 0..65535; 0 picks a free port
};

// invalid_argument naming `flag` and the text when it is not HOST:PORT.
Result<ListenAddress> parse_listen_address(const std::string& text, std::string_view flag);

// True for the numeric addresses 127.x.y.z, ::1 (also [::1]) and
// ::ffff:127.x.y.z, and for localhost: a server bound there is reachable
// from this machine only. A DNS name is not, whatever it starts with.
bool is_loopback_host(const std::string& host);

}  // namespace dancemoe::http
