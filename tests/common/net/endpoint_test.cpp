// The addresses operators type, and what they are told about the usual slips.
#include "common/net/endpoint.h"

#include <doctest/doctest.h>

#include "common/net/port_probe.h"
#include "tests/support/listening_port.h"

namespace dancemoe::net {
namespace {

TEST_CASE("endpoints: tcp://HOST:PORT parses, slips are named with the form expected") {
  Result<HostPort> ok = parse_tcp_endpoint("--scheduler", "tcp://sched.lab:5550");
  REQUIRE(ok.is_ok());
  CHECK(ok->host == "sched.lab");
  CHECK(ok->port == 5550);
  REQUIRE(parse_tcp_endpoint("--experts", "tcp://*:0", true).is_ok());
  REQUIRE(parse_tcp_endpoint("--experts", "tcp://127.0.0.1:*", true).is_ok());
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& c :
       {Case{"127.0.0.1:5550", "lacks the tcp:// prefix"},
        Case{"http://127.0.0.1:5550", "not a URL: use tcp://"}, Case{"udp://x:1", "only tcp://"},
        Case{"tcp://host", "no port"}, Case{"tcp://host:99999", "not a number from 1 to 65535"},
        Case{"tcp://host:0", "not a number from 1 to 65535"},
        Case{"tcp://*:5550", "'*' binds every interface"}}) {
    CAPTURE(c.text);
    Result<HostPort> r = parse_tcp_endpoint("--scheduler", c.text);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("--scheduler '" + std::string(c.text) + "'") !=
          std::string::npos);
    CHECK(r.status().message().find(c.want) != std::string::npos);
    CHECK(r.status().message().find("expected tcp://HOST:PORT") != std::string::npos);
  }
}

TEST_CASE("endpoints: HTTP addresses with or without http://, never with a path") {
  for (const char* text : {"127.0.0.1:8080", "http://127.0.0.1:8080", "http://127.0.0.1:8080/"}) {
    Result<HostPort> r = parse_http_address("--node", text);
    REQUIRE(r.is_ok());
    CHECK(r->text() == "127.0.0.1:8080");
  }
  Result<HostPort> path = parse_http_address("--node", "http://host:8080/v1");
  REQUIRE_FALSE(path.is_ok());
  CHECK(path.status().message().find("without a path") != std::string::npos);
  CHECK(path.status().message().find("expected HOST:PORT or http://HOST:PORT") !=
        std::string::npos);
  CHECK(parse_http_address("--node", "tcp://host:1").status().message().find("use http://") !=
        std::string::npos);
  CHECK(parse_http_address("--node", "https://host:1").status().message().find("TLS") !=
        std::string::npos);
  CHECK(parse_http_address("--http", "127.0.0.1:0", true).is_ok());
  CHECK_FALSE(parse_http_address("--node", "127.0.0.1:0").is_ok());
}

TEST_CASE("port probe: a port in use is named, a free one passes") {
  testing::ListeningPort held;
  const int port = held.port();
  Status busy = check_tcp_port_free("--http", "127.0.0.1", port);
  CHECK(busy.code() == StatusCode::kUnavailable);
  CHECK(busy.message().find("--http 127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(busy.message().find("in use") != std::string::npos);
  held.close();
  CHECK(check_tcp_port_free("--http", "127.0.0.1", port).is_ok());
  CHECK(check_tcp_port_free("--http", "127.0.0.1", 0).is_ok());
  CHECK_FALSE(check_tcp_port_free("--http", "203.0.113.7", 8080).is_ok());  // not this host
}

}  // namespace
}  // namespace dancemoe::net
