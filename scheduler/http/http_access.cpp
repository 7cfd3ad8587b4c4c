#include "scheduler/http/http_access.h"

#include <httplib.h>

#include "common/http/bearer_token.h"
#include "common/http/listen_address.h"
#include "common/net/key_token.h"

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

AccessDecision refuse(int status, std::string reason) {
  return {false, status, std::move(reason), {}};
}

constexpr const char* kHowToGetToken =
    "send \"Authorization: Bearer TOKEN\" with the token `dancemoe keys http-token --key "
    "YOUR.key --scheduler-key SCHEDULER.pub` prints";

}  // namespace

AccessDecision HttpAccess::authorize(const httplib::Request& req, HttpRight right) const {
  const std::string token = http::bearer_token(req);
  if (!token.empty()) return with_token(token, right);
  if (right == HttpRight::kOperate) {
    return refuse(
        401,
        keys_ ? std::string("this changes the cluster and needs an operator key: ") + kHowToGetToken
              : std::string("this changes the cluster: send this scheduler's "
                            "--http-token as \"Authorization: Bearer TOKEN\"") +
                    (insecure_token_.empty() ? " (it has none: use the CLI on the control port)"
                                             : ""));
  }
  if (!http::is_loopback_host(req.remote_addr)) {
    return refuse(401, std::string("reading this scheduler from another machine needs a "
                                   "member's or an operator's key: ") +
                           (keys_ ? kHowToGetToken
                                  : "send this scheduler's --http-token as \"Authorization: "
                                    "Bearer TOKEN\""));
  }
  const std::string host = req.get_header_value("Host");
  if (!http::is_loopback_host(host_name(host))) {
    return refuse(403,
                  "without a token this endpoint answers only requests addressed to a loopback "
                  "name (127.0.0.1, localhost), not '" +
                      host.substr(0, 100) +
                      "' (DNS rebinding guard); send a key token to use "
                      "another name");
  }
  return {true, 200, "", "local reader"};
}

AccessDecision HttpAccess::with_token(const std::string& token, HttpRight right) const {
  if (!keys_) {
    if (insecure_token_.empty() || !http::constant_time_equal(token, insecure_token_)) {
      return refuse(401, insecure_token_.empty()
                             ? "this scheduler has no --http-token: send no token (loopback only)"
                             : "wrong token: send this scheduler's --http-token as "
                               "\"Authorization: Bearer TOKEN\"");
    }
    return {true, 200, "", "the --http-token"};
  }
  Result<std::string> key = net::verify_key_token(token, keys_->scheduler);
  if (!key.is_ok()) return refuse(401, "token refused: " + key.status().message());
  for (const auto& [name, op_key] : keys_->operators) {
    if (op_key == *key) return {true, 200, "", "operator '" + name + "'"};
  }
  if (!keys_->members->contains(*key)) {
    return refuse(401,
                  "key " + *key + " is not a member of this cluster (never admitted, or revoked)");
  }
  if (right == HttpRight::kOperate) {
    return refuse(
        403, "this changes the cluster and needs an operator key; key " + *key + " is a node's");
  }
  return {true, 200, "", "node key " + *key};
}

}  // namespace dancemoe::scheduler
