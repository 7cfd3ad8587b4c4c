#include "common/http/listen_address.h"

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
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace dancemoe::http
