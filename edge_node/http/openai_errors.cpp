#include "edge_node/http/openai_errors.h"

namespace dancemoe::node {

using nlohmann::json;

ApiError invalid_request(std::string param, std::string message, std::string code) {
  ApiError e;
  e.http_status = 400;
  e.param = std::move(param);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

ApiError api_error_from_status(const Status& status, std::string param) {
  ApiError e;
  e.message = status.message();
  e.code = std::string(status_code_name(status.code()));
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      e.http_status = 400;
      e.param = std::move(param);
      break;
    case StatusCode::kNotFound:
      e.http_status = 404;
      break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      e.http_status = 503;
      e.type = "server_error";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      break;
  }
  return e;
}

json api_error_json(const ApiError& e) {
  return {{"error",
           {{"message", e.message},
            {"type", e.type},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

}  // namespace dancemoe::node
