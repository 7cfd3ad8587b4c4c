#include "common/http/http_reply.h"

#include <httplib.h>

#include <string>

namespace dancemoe::http {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void send_ordered_json(httplib::Response& res, int status, const nlohmann::ordered_json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                  "application/json");
}

void send_status_error(httplib::Response& res, const Status& status) {
  send_json(res, http_status_for(status.code()),
            nlohmann::json{{"error",
                            {{"code", std::string(status_code_name(status.code()))},
                             {"message", status.message()}}}});
}

int http_status_for(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      return 400;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return 503;
    default:
      return 500;
  }
}

}  // namespace dancemoe::http
