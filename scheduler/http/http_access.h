// HttpAccess: who may read the scheduler over HTTP -- the one check every
// API route and /metrics passes before it runs (the page's static files
// hold no data and are public, so a browser can load the page that asks
// for a token).
//
// Today (no keys on main yet): with a token configured (--http-token),
// "Authorization: Bearer TOKEN" is required; without one, anyone who can
// connect may read, which the configuration allows only on a loopback
// address (scheduler_config.cpp refuses another address without a token) --
// and only requests addressed to a loopback name (the Host header: 127.x,
// localhost, [::1]) are answered, so that a web page elsewhere cannot read
// the API through a DNS name it rebinds to 127.0.0.1.
//
// Rights, as the control port will have them once node and operator keys
// exist (issue 13): reading status needs a member's or an operator's key;
// changes need an operator's. The endpoint serves reads only -- placement
// rounds, applies and admissions stay on the control port, where the CLI
// signs them with its key -- so every route needs HttpRight::kRead. When
// keys land, authorize() is the one function to fill: map the bearer token
// to a key (e.g. a token file derived from an operator's key pair) and ask
// the key ring whether its principal has the right. docs/web.md says what
// remains. Immutable after construction; thread-safe.
#pragma once

#include <string>

namespace httplib {
struct Request;
}

namespace dancemoe::scheduler {

enum class HttpRight { kRead };

struct AccessDecision {
  bool allowed = false;
  int http_status = 401;  // when refused: 401 (no or wrong token) or 403 (Host)
  std::string reason;     // why not, for the error body
};

class HttpAccess {
 public:
  // `token` empty: no token required (a loopback-only endpoint).
  explicit HttpAccess(std::string token) : token_(std::move(token)) {}

  AccessDecision authorize(const httplib::Request& req, HttpRight right) const;
  bool requires_token() const { return !token_.empty(); }

 private:
  std::string token_;
};

}  // namespace dancemoe::scheduler
