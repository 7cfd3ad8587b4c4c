// The addresses operators type: ZeroMQ endpoints (`--scheduler`,
// `--experts`, `--advertise`, `--control`: tcp://HOST:PORT) and HTTP
// addresses (`--http`, `--node`: HOST:PORT, or http://HOST:PORT[/] where a
// URL is natural). A malformed one is refused with a message that names the
// flag, shows the value and the form expected, and says what to do about
// the usual slips (a missing tcp://, an http:// where tcp:// belongs, a
// path). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/base/status.h"

namespace dancemoe::net {

struct HostPort {
  std::string host;  // "127.0.0.1", "ws1.lab", "*" (any, for binding)
  int port = 0;      // 0: any free port (binding only)
  std::string text() const { return host + ":" + std::to_string(port); }
};

// tcp://HOST:PORT; `allow_any` admits HOST "*" and port "*" or 0 (a bind).
Result<HostPort> parse_tcp_endpoint(std::string_view flag, std::string_view text,
                                    bool allow_any = false);

// HOST:PORT or http://HOST:PORT (a trailing "/" is fine, a path is not);
// `allow_any` admits port 0 (a bind).
Result<HostPort> parse_http_address(std::string_view flag, std::string_view text,
                                    bool allow_any = false);

}  // namespace dancemoe::net
