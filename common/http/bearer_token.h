// Bearer-token authentication as both HTTP servers check it: the token of
// an "Authorization: Bearer TOKEN" header (scheme case-insensitive), and a
// comparison whose time does not depend on where the strings differ, so a
// client cannot find a token byte by byte by timing its refusals.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace httplib {
struct Request;
}

namespace dancemoe::http {

// TOKEN of "Authorization: Bearer TOKEN"; empty when absent or another scheme.
std::string bearer_token(const httplib::Request& req);

bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace dancemoe::http
