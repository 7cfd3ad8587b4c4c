// Writing replies the way every DanceMoE HTTP server does: JSON bodies
// (strings that are not UTF-8 are replaced, never an exception), and a
// Status as {"error": {"code", "message"}} with the HTTP status its code
// maps to.
//
// Pure functions over one response; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "common/base/status.h"

namespace httplib {
struct Response;
}

namespace dancemoe::http {

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
// The same, keeping the keys in the order they were inserted.
void send_ordered_json(httplib::Response& res, int status, const nlohmann::ordered_json& body);

// {"error": {"code": "invalid_argument", "message": ...}} with http_status_for(code).
void send_status_error(httplib::Response& res, const Status& status);

// 400 for invalid_argument and not_found (a request for something that
// does not exist is the client's mistake), 429 for resource_exhausted, 503 for unavailable /
// deadline_exceeded, 500 otherwise.
int http_status_for(StatusCode code);

}  // namespace dancemoe::http
