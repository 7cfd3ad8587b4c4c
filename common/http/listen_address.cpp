#include "common/http/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdexcept>

namespace dancemoe::http {

Result<ListenAddress> parse_listen_address(const std::string& text, std::string_view flag) {
  const std::string name(flag);
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return invalid_argument(name + ": expected HOST:PORT (e.g. 127.0.0.1:8080), got '" + text +
                            "'");
  }
  ListenAddress address;
  address.host = text.substr(0, colon);
  try {
    size_t used = 0;
    address.port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || address.port < 0 || address.port > 65535) {
      throw std::out_of_range("");
    }
  } catch (const std::exception&) {
    return invalid_argument(name + ": the port of '" + text + "' is not a number in 0..65535");
  }
  return address;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  std::string text = host;
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  // Numeric only: "127.attacker.example" is a DNS name, not a loopback address.
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;  // ::ffff:127.x.y.z
}

}  // namespace dancemoe::http
