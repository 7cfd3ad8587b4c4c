// HttpAccess: who may do what over the scheduler's HTTP endpoint -- the one
// check every API route and /metrics passes before it runs (the page's
// static files hold no data and are public, so that a browser can load the
// page that asks for a token). docs/web.md ("Rights") is the user's side.
//
// The same members and operators as the control port (docs/security.md),
// with the same rights:
//
//   HttpRight::kRead     every GET of /api/* and /metrics: a member (node)
//                        key or an operator key -- or no key at all for a
//                        local reader (below)
//   HttpRight::kOperate  what changes the cluster (POST /api/round): an
//                        operator key, always, also from loopback
//
// A client proves a key with "Authorization: Bearer dmk1-..." -- the key
// token of common/net/key_token.h (`dancemoe keys http-token`), made from
// its secret key for this scheduler's public key. The key it names is then
// classified per request against the live allowlist the control port's ZAP
// handler uses (KeyRing::allowlist: a revoked node key stops working at
// once) and the operator keys (fixed until restart, as on the control port).
//
// A local reader: a request without a token may read when it comes from a
// loopback address *and* is addressed to a loopback name (Host: 127.x,
// localhost, [::1]) -- anyone who can run a program on the scheduler's
// machine could read its database anyway. Off loopback, reading needs a
// key. The Host check stops a web page elsewhere from reading the API
// through a DNS name it rebinds to 127.0.0.1; nothing acts without a token,
// which a page elsewhere cannot add to a request (no CORS), so neither can
// it make the browser act for it.
//
// --insecure (no keys): one shared --http-token, if configured, grants
// every right, as the insecure control port grants everything to everyone;
// without it HTTP only serves local readers.
//
// Immutable after construction (the allowlist is shared and thread-safe);
// thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/net/curve_keys.h"
#include "common/net/zap_handler.h"

namespace httplib {
struct Request;
}

namespace dancemoe::scheduler {

enum class HttpRight { kRead, kOperate };

// What a keyed scheduler authenticates HTTP clients with.
struct HttpKeys {
  net::CurveKeyPair scheduler;                       // tokens are made for its public key
  std::shared_ptr<const net::KeyAllowlist> members;  // node and operator keys, live
  std::map<std::string, std::string> operators;      // name -> public key
};

struct AccessDecision {
  bool allowed = false;
  int http_status = 401;  // when refused: 401 (no, bad or unknown token) or 403 (not allowed)
  std::string reason;     // why not, for the error body
  std::string who;        // when allowed: "operator 'alice'", "node key 'ws1'", "local reader"
};

class HttpAccess {
 public:
  // `keys`: a keyed scheduler. Without: --insecure, with `insecure_token`
  // (may be empty).
  HttpAccess(std::optional<HttpKeys> keys, std::string insecure_token)
      : keys_(std::move(keys)), insecure_token_(std::move(insecure_token)) {}

  AccessDecision authorize(const httplib::Request& req, HttpRight right) const;

  // Whether a request from another machine could be answered at all.
  bool authenticates() const { return keys_.has_value() || !insecure_token_.empty(); }

 private:
  AccessDecision with_token(const std::string& token, HttpRight right) const;

  std::optional<HttpKeys> keys_;
  std::string insecure_token_;
};

}  // namespace dancemoe::scheduler
