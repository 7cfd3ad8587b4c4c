#include "common/http/listen_address.h"

#include <doctest/doctest.h>

namespace dancemoe::http {

TEST_CASE("listen address: HOST:PORT is parsed, anything else names the flag and the text") {
  auto a = parse_listen_address("127.0.0.1:8090", "--http");
  REQUIRE(a.is_ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 8090);
  auto v6 = parse_listen_address("::1:0", "--http");
  REQUIRE(v6.is_ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 0);
  for (const char* bad : {"8080", ":8080", "host:", "host:x", "host:70000", "host:-1", "h:80x"}) {
    auto r = parse_listen_address(bad, "--http");
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("--http") == 0);
    CHECK(r.status().message().find(bad) != std::string::npos);
  }
}

TEST_CASE("listen address: loopback hosts are told from reachable ones") {
  for (const char* local :
       {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"}) {
    CHECK(is_loopback_host(local));
  }
  // A DNS name that starts like a loopback address is a name anyone can
  // point anywhere (DNS rebinding), not a loopback address.
  for (const char* open : {"0.0.0.0", "::", "192.168.1.4", "example.org", "", "127.evil.example",
                           "127.0.0.1.evil.example", "::ffff:10.0.0.1"}) {
    CHECK_FALSE(is_loopback_host(open));
  }
}

}  // namespace dancemoe::http
