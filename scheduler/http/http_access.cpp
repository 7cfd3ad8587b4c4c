#include "scheduler/http/http_access.h"

#include "common/http/bearer_token.h"

namespace dancemoe::scheduler {

AccessDecision HttpAccess::authorize(const httplib::Request& req, HttpRight right) const {
  (void)right;  // every right is granted by the one token until keys exist (header)
  if (token_.empty()) return {true, ""};
  const std::string presented = http::bearer_token(req);
  if (presented.empty()) {
    return {false,
            "this scheduler's API needs its --http-token: send \"Authorization: Bearer TOKEN\""};
  }
  if (!http::constant_time_equal(presented, token_)) {
    return {false,
            "wrong token: send this scheduler's --http-token as \"Authorization: Bearer "
            "TOKEN\""};
  }
  return {true, ""};
}

}  // namespace dancemoe::scheduler
