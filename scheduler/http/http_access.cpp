#include "scheduler/http/http_access.h"

#include <httplib.h>

#include "common/http/bearer_token.h"
#include "common/http/listen_address.h"

namespace dancemoe::scheduler {

namespace {

// "127.0.0.1:8090" -> "127.0.0.1", "[::1]:8090" -> "::1", "localhost" -> "localhost".
std::string host_name(const std::string& host) {
  if (!host.empty() && host[0] == '[') {
    const size_t end = host.find(']');
    return end == std::string::npos ? host : host.substr(1, end - 1);
  }
  return host.substr(0, host.find(':'));
}

}  // namespace

AccessDecision HttpAccess::authorize(const httplib::Request& req, HttpRight right) const {
  (void)right;  // every right is granted by the one token until keys exist (header)
  if (token_.empty()) {
    const std::string host = req.get_header_value("Host");
    if (http::is_loopback_host(host_name(host))) return {true, 200, ""};
    return {false, 403,
            "this endpoint answers only requests addressed to a loopback name (127.0.0.1, "
            "localhost), not '" +
                host.substr(0, 100) +
                "': set --http-token to serve it under other names (DNS rebinding guard)"};
  }
  const std::string presented = http::bearer_token(req);
  if (presented.empty()) {
    return {false, 401,
            "this scheduler's API needs its --http-token: send \"Authorization: Bearer TOKEN\""};
  }
  if (!http::constant_time_equal(presented, token_)) {
    return {false, 401,
            "wrong token: send this scheduler's --http-token as \"Authorization: Bearer "
            "TOKEN\""};
  }
  return {true, 200, ""};
}

}  // namespace dancemoe::scheduler
