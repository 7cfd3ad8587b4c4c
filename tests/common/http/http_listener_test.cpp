// HttpListener, static assets and the bearer-token helpers on a real
// socket on 127.0.0.1.
#include "common/http/http_listener.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "common/http/bearer_token.h"
#include "common/http/http_reply.h"
#include "common/http/static_assets.h"

namespace dancemoe::http {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A client on a raw socket: sends what a test wants, byte by byte if need be.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // What arrives until the server closes or `wait` passes.
  std::string read_until_closed(std::chrono::milliseconds wait) {
    std::string got;
    const auto deadline = Clock::now() + wait;
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 1))) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      got.append(buffer, static_cast<size_t>(n));
    }
    return got;
  }
  // Reads until `marker` has arrived (or `wait` passes).
  std::string read_until(const std::string& marker, std::chrono::milliseconds wait) {
    std::string got;
    const auto deadline = Clock::now() + wait;
    while (got.find(marker) == std::string::npos && Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      got.append(buffer, static_cast<size_t>(n));
    }
    return got;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

std::unique_ptr<HttpListener> started_listener(HttpListenerOptions options) {
  auto listener = HttpListener::bind(options);
  REQUIRE(listener.is_ok());
  (*listener)->server().Get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}});
  });
  (*listener)->server().Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.body, "text/plain");
  });
  (*listener)->start();
  return std::move(*listener);
}

constexpr StaticAsset kPage[] = {
    {"/index.html", "text/html; charset=utf-8", "<h1>page</h1>"},
    {"/app.js", "text/javascript; charset=utf-8", "let x = 1;"},
};

}  // namespace

TEST_CASE("http listener: binds port 0, serves assets with a same-origin policy, stops") {
  HttpListenerOptions options;
  options.address = "127.0.0.1:0";
  options.max_body_bytes = 64;
  auto listener = HttpListener::bind(options);
  REQUIRE(listener.is_ok());
  HttpListener& l = **listener;
  CHECK(l.loopback());
  CHECK(l.address().port > 0);
  CHECK(l.bound_address() == "127.0.0.1:" + std::to_string(l.address().port));
  serve_static_assets(l.server(), kPage);
  l.server().Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, {{"body", req.body}, {"token", bearer_token(req)}});
  });
  l.server().Get("/fail", [](const httplib::Request&, httplib::Response& res) {
    send_status_error(res, unavailable("not now"));
  });
  l.start();

  httplib::Client client("127.0.0.1", l.address().port);
  auto root = client.Get("/");
  REQUIRE(root);
  CHECK(root->status == 200);
  CHECK(root->body == "<h1>page</h1>");
  CHECK(root->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(root->get_header_value("Content-Security-Policy") == std::string(kPageSecurityPolicy));
  auto js = client.Get("/app.js");
  REQUIRE(js);
  CHECK(js->body == "let x = 1;");
  auto escaped = client.Get("/appxjs");  // routes are regular expressions: '.' is escaped
  REQUIRE(escaped);
  CHECK(escaped->status == 404);

  auto echo = client.Post("/echo", {{"Authorization", "bEaReR s3cret"}}, "hi", "text/plain");
  REQUIRE(echo);
  CHECK(nlohmann::json::parse(echo->body)["token"] == "s3cret");
  auto big = client.Post("/echo", std::string(65, 'x'), "text/plain");
  REQUIRE(big);
  CHECK(big->status == 413);  // the body bound
  auto fail = client.Get("/fail");
  REQUIRE(fail);
  CHECK(fail->status == 503);
  CHECK(nlohmann::json::parse(fail->body)["error"]["code"] == "unavailable");

  l.stop();
  CHECK_FALSE(client.Get("/"));
}

TEST_CASE("http listener: a busy port or a bad address is an error naming the flag") {
  HttpListenerOptions options;
  options.address = "127.0.0.1:0";
  auto first = HttpListener::bind(options);
  REQUIRE(first.is_ok());
  options.address = (*first)->bound_address();
  options.flag = "--dashboard";
  auto second = HttpListener::bind(options);
  REQUIRE_FALSE(second.is_ok());
  CHECK(second.status().message().find("--dashboard: cannot bind") == 0);
  options.address = "nonsense";
  CHECK(HttpListener::bind(options).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("bearer token: other schemes give no token, comparison needs equal strings") {
  httplib::Request req;
  req.headers.emplace("Authorization", "Basic abc");
  CHECK(bearer_token(req).empty());
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "abcd"));
  CHECK_FALSE(constant_time_equal("", "a"));
}

TEST_CASE("http listener: /health answers within 100 ms while slow clients trickle headers") {
  HttpListenerOptions options;
  options.n_threads = 4;  // far fewer threads than slow clients
  auto listener = started_listener(options);
  const int port = listener->address().port;
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(std::make_unique<RawClient>(port));
    REQUIRE(slow.back()->send("GET /health HTTP/1.1\r\nHost: x\r\n"));
  }
  std::atomic<bool> trickling{true};
  std::thread trickle([&] {
    while (trickling) {  // one byte of a header line per client every 50 ms, never the end
      for (auto& c : slow) c->send("X");
      std::this_thread::sleep_for(50ms);
    }
  });
  httplib::Client client("127.0.0.1", port);
  double worst_ms = 0;
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    auto res = client.Get("/health");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    REQUIRE(res);
    CHECK(res->status == 200);
    worst_ms = std::max(worst_ms, ms);
    std::this_thread::sleep_for(20ms);
  }
  trickling = false;
  trickle.join();
  CHECK(worst_ms < 100.0);
}

TEST_CASE("http listener: a head that does not arrive within the deadline gets 408 and a close") {
  HttpListenerOptions options;
  options.header_timeout = 300ms;
  auto listener = started_listener(options);
  RawClient c(listener->address().port);
  const auto start = Clock::now();
  REQUIRE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n"));
  std::string got;
  for (int i = 0; i < 40 && !c.closed(); ++i) {  // keeps sending: the deadline still holds
    c.send("X");
    got += c.read_until_closed(50ms);
  }
  CHECK(c.closed());
  CHECK(got.rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
  CHECK(got.find("did not arrive within 300 ms") != std::string::npos);
  CHECK(Clock::now() - start < 1500ms);
  CHECK(listener->gate_counters().timed_out.load() == 1);
}

TEST_CASE("http listener: too many header fields or header bytes get 431") {
  HttpListenerOptions options;
  options.max_header_fields = 20;
  options.max_header_bytes = 4096;
  auto listener = started_listener(options);
  {
    RawClient c(listener->address().port);
    std::string request = "GET /health HTTP/1.1\r\n";
    for (int i = 0; i < 21; ++i) request += "X-" + std::to_string(i) + ": 1\r\n";
    REQUIRE(c.send(request + "\r\n"));
    const std::string got = c.read_until_closed(2000ms);
    CHECK(got.rfind("HTTP/1.1 431 ", 0) == 0);
    CHECK(got.find("more than 20 header fields") != std::string::npos);
  }
  {
    RawClient c(listener->address().port);
    REQUIRE(c.send("GET /health HTTP/1.1\r\nX-Big: " + std::string(5000, 'a')));
    const std::string got = c.read_until_closed(2000ms);
    CHECK(got.rfind("HTTP/1.1 431 ", 0) == 0);
    CHECK(got.find("larger than 4096 bytes") != std::string::npos);
    CHECK(c.closed());
  }
  {  // 20 fields are fine
    RawClient c(listener->address().port);
    std::string request = "GET /health HTTP/1.1\r\n";
    for (int i = 0; i < 19; ++i) request += "X-" + std::to_string(i) + ": 1\r\n";
    REQUIRE(c.send(request + "Connection: close\r\n\r\n"));
    CHECK(c.read_until_closed(2000ms).rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  }
}

TEST_CASE("http listener: bodies need a length, oversized ones get 413 before they are read") {
  HttpListenerOptions options;
  options.max_body_bytes = 1000;
  auto listener = started_listener(options);
  {
    RawClient c(listener->address().port);
    REQUIRE(c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"));
    CHECK(c.read_until_closed(2000ms).rfind("HTTP/1.1 411 ", 0) == 0);
  }
  {
    RawClient c(listener->address().port);
    REQUIRE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 5000000\r\n\r\nxx"));
    const std::string got = c.read_until_closed(2000ms);
    CHECK(got.rfind("HTTP/1.1 413 ", 0) == 0);
    CHECK(got.find("larger than the limit of 1000 bytes") != std::string::npos);
  }
  {
    RawClient c(listener->address().port);
    REQUIRE(c.send("nonsense\r\n\r\n"));
    CHECK(c.read_until_closed(2000ms).rfind("HTTP/1.1 400 ", 0) == 0);
  }
}

TEST_CASE("http listener: keep-alive, pipelined requests, a body in pieces and 100-continue") {
  auto listener = started_listener({});
  RawClient c(listener->address().port);
  // Two requests in one write, then a third whose body comes later.
  REQUIRE(
      c.send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nonePOST /echo HTTP/1.1\r\n"
             "Content-Length: 3\r\n\r\ntwo"));
  std::string got = c.read_until("two", 2000ms);
  CHECK(got.find("one") != std::string::npos);
  CHECK(got.find("two") != std::string::npos);
  REQUIRE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  got = c.read_until("\r\n\r\n", 2000ms);
  CHECK(got == "HTTP/1.1 100 Continue\r\n\r\n");  // from the gate, once
  std::this_thread::sleep_for(50ms);
  REQUIRE(c.send("thr"));
  std::this_thread::sleep_for(50ms);
  REQUIRE(c.send("ee"));
  got = c.read_until("three", 2000ms);
  CHECK(got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(got.find("100 Continue") == std::string::npos);
  CHECK(got.find("three") != std::string::npos);
}

TEST_CASE("http listener: connections beyond the limit get 503 at once") {
  HttpListenerOptions options;
  options.max_connections = 3;
  auto listener = started_listener(options);
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(listener->address().port));
  RawClient extra(listener->address().port);
  const std::string got = extra.read_until_closed(2000ms);
  CHECK(got.rfind("HTTP/1.1 503 ", 0) == 0);
  CHECK(got.find("too_many_connections") != std::string::npos);
  held.clear();
  // Once they are gone, new connections are served again.
  const auto deadline = Clock::now() + 2s;
  while (listener->gate_counters().over_capacity.load() == 1 && Clock::now() < deadline) {
    httplib::Client client("127.0.0.1", listener->address().port);
    auto res = client.Get("/health");
    if (res && res->status == 200) break;
    std::this_thread::sleep_for(20ms);
  }
  httplib::Client client("127.0.0.1", listener->address().port);
  auto res = client.Get("/health");
  REQUIRE(res);
  CHECK(res->status == 200);
}

}  // namespace dancemoe::http
