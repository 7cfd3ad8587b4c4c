// ApiError: an error answered by the OpenAI-compatible API, in OpenAI's
// shape so that its clients (the `openai` npm and Python packages, curl
// scripts written for api.openai.com) show the message and the field:
//
//   HTTP 4xx/5xx  {"error": {"message": "...", "type": "invalid_request_error",
//                            "param": "temperature" | null, "code": "..." | null}}
//
// type: invalid_request_error (400, 404), authentication_error (401),
// rate_limit_error (429: the request queue is full), server_error (5xx).
// Values; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/base/status.h"

namespace dancemoe::node {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault; empty: null
  std::string code;   // short machine-readable reason; empty: null
};

// 400 invalid_request_error naming `param`.
ApiError invalid_request(std::string param, std::string message,
                         std::string code = "invalid_value");
// A Status from the engine or the cluster: invalid_argument -> 400 (with
// `param` when the caller knows the field), not_found -> 404,
// resource_exhausted -> 429, unavailable / deadline_exceeded -> 503,
// anything else -> 500.
ApiError api_error_from_status(const Status& status, std::string param = "");

nlohmann::json api_error_json(const ApiError& error);

}  // namespace dancemoe::node
