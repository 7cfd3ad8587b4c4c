#include "common/net/endpoint.h"

#include <charconv>

namespace dancemoe::net {
namespace {

Status bad(std::string_view flag, std::string_view text, std::string_view expected,
           const std::string& why) {
  return invalid_argument(std::string(flag) + " '" + std::string(text) + "': " + why +
                          " (expected " + std::string(expected) + ")");
}

// HOST:PORT, the host possibly [IPv6].
Result<HostPort> host_port(std::string_view flag, std::string_view whole, std::string_view text,
                           std::string_view expected, bool allow_any) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return bad(flag, whole, expected, "no port");
  }
  HostPort out;
  out.host = std::string(text.substr(0, colon));
  const std::string_view port = text.substr(colon + 1);
  if (port == "*" && allow_any) return out;
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 0 ||
      value > 65535 || (value == 0 && !allow_any)) {
    return bad(flag, whole, expected,
               "the port '" + std::string(port) + "' is not a number from 1 to 65535");
  }
  if (out.host == "*" && !allow_any) {
    return bad(flag, whole, expected, "'*' binds every interface; give the host to connect to");
  }
  if (out.host.find('/') != std::string::npos) {
    return bad(flag, whole, expected, "a path has no place in an address");
  }
  out.port = value;
  return out;
}

}  // namespace

Result<HostPort> parse_tcp_endpoint(std::string_view flag, std::string_view text, bool allow_any) {
  constexpr std::string_view kExpected = "tcp://HOST:PORT";
  if (text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0) {
    return bad(flag, text, kExpected,
               "this is a ZeroMQ endpoint, not a URL: use tcp:// (the scheduler's control port "
               "and the nodes' expert ports speak ZeroMQ, not HTTP)");
  }
  if (text.rfind("tcp://", 0) != 0) {
    return bad(flag, text, kExpected,
               text.find("://") == std::string_view::npos ? "it lacks the tcp:// prefix"
                                                          : "only tcp:// is supported");
  }
  return host_port(flag, text, text.substr(6), kExpected, allow_any);
}

Result<HostPort> parse_http_address(std::string_view flag, std::string_view text, bool allow_any) {
  constexpr std::string_view kExpected = "HOST:PORT or http://HOST:PORT";
  std::string_view rest = text;
  if (rest.rfind("https://", 0) == 0) {
    return bad(flag, text, kExpected, "nodes serve plain HTTP; put TLS in a proxy in front");
  }
  if (rest.rfind("tcp://", 0) == 0) {
    return bad(flag, text, kExpected, "this is the HTTP API: use http:// (or no prefix)");
  }
  if (rest.rfind("http://", 0) == 0) rest.remove_prefix(7);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) {
    return bad(flag, text, kExpected,
               "give the node's address without a path (the client adds /v1/...)");
  }
  return host_port(flag, text, rest, kExpected, allow_any);
}

}  // namespace dancemoe::net
