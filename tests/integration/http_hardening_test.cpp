// The node's HTTP front under a fault probe's inputs (issue 16): slow
// clients that trickle headers, oversized and too many headers, bodies
// nested 100k deep, prompts far longer than the context, and a second node
// on a port in use -- each against a real node process on 127.0.0.1.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/integration/openai_node.h"
#include "tests/support/process.h"

namespace dancemoe::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A connection that sends what the test says, as slowly as it likes.
class SlowClient {
 public:
  explicit SlowClient(const std::string& host_port) {
    const size_t colon = host_port.rfind(':');
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1))));
    ::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &addr.sin_addr);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~SlowClient() { ::close(fd_); }
  SlowClient(const SlowClient&) = delete;
  SlowClient& operator=(const SlowClient&) = delete;
  void send(const std::string& bytes) {
    (void)!::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // Everything until the server closes (or `wait` passes).
  std::string read_all(std::chrono::milliseconds wait) {
    std::string got;
    const auto deadline = SteadyClock::now() + wait;
    while (SteadyClock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      got.append(buffer, static_cast<size_t>(n));
    }
    return got;
  }

 private:
  int fd_ = -1;
};

}  // namespace

TEST_CASE("http hardening: /health answers within 100 ms while 100 slow clients trickle headers") {
  OpenAiTestNode n;  // 64 queued + 16 handler threads: fewer than the slow clients
  std::vector<std::unique_ptr<SlowClient>> slow;
  for (int i = 0; i < 100; ++i) {
    slow.push_back(std::make_unique<SlowClient>(n.http()));
    slow.back()->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n");
  }
  std::atomic<bool> trickling{true};
  std::thread trickle([&] {
    while (trickling) {  // a byte of a header every 100 ms, never the end of the head
      for (auto& c : slow) c->send("X");
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);  // every slow client is connected and holding on
  double worst_ms = 0;
  int answered = 0;
  for (int i = 0; i < 10; ++i) {
    httplib::Client client(n.base_url());
    client.set_read_timeout(2, 0);
    const auto start = SteadyClock::now();
    auto res = client.Get("/health");
    worst_ms = std::max(
        worst_ms, std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count());
    if (res && res->status == 200) ++answered;
    std::this_thread::sleep_for(50ms);
  }
  trickling = false;
  trickle.join();
  CHECK(answered == 10);
  CHECK(worst_ms < 100.0);
}

TEST_CASE("http hardening: too many or too large headers get 431, counted in /metrics") {
  OpenAiTestNode n;
  {
    SlowClient c(n.http());
    std::string request = "GET /health HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 150; ++i) request += "X-Field-" + std::to_string(i) + ": 1\r\n";
    c.send(request + "\r\n");
    const std::string got = c.read_all(3000ms);
    CHECK(got.rfind("HTTP/1.1 431 ", 0) == 0);
    CHECK(got.find("more than 100 header fields") != std::string::npos);
  }
  {
    SlowClient c(n.http());
    c.send("GET /health HTTP/1.1\r\nCookie: " + std::string(40000, 'c') + "\r\n\r\n");
    CHECK(c.read_all(3000ms).rfind("HTTP/1.1 431 ", 0) == 0);
  }
  CHECK(n.metric_is(R"(dancemoe_http_connections_refused_total{reason="header_too_large"})", 2));
}

TEST_CASE("http hardening: bodies nested 100k deep get a 400 and the node keeps serving") {
  OpenAiTestNode n;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const char* path :
       {"/v1/completions", "/v1/chat/completions", "/v1/generate", "/tokenize", "/detokenize"}) {
    const auto r = n.post(path, R"({"prompt": "x", "temperature": )" + deep + "}");
    INFO(path << ": " << r.status << " " << r.raw.substr(0, 300));
    CHECK(r.status == 400);
    CHECK(r.raw.find("nested deeper than 128 levels") != std::string::npos);
    CHECK(r.raw.size() < 1000);
  }
  const auto bare = n.post("/v1/completions", deep);
  CHECK(bare.status == 400);
  const auto health = n.get("/health");
  CHECK(health.status == 200);
  CHECK(n.node().process().running());
}

TEST_CASE("http hardening: a prompt far over the context is refused before it is all tokenized") {
  OpenAiTestNode n({"--context", "128"});
  std::string huge;
  while (huge.size() < 12'000'000) huge += "lorem ipsum dolor sit amet ";
  const auto start = SteadyClock::now();
  const auto r = n.post("/v1/completions", json{{"prompt", huge}, {"max_tokens", 1}}.dump());
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  INFO(r.raw.substr(0, 300));
  CHECK(r.status == 400);
  CHECK(r.body["error"]["code"] == "context_length_exceeded");
  CHECK(r.body["error"]["message"].get<std::string>().find("has at least") != std::string::npos);
  CHECK(seconds < 10.0);  // sending 12 MB included; tokenizing all of it took far longer
  const auto generate = n.post("/v1/generate", json{{"prompt", huge}, {"max_tokens", 1}}.dump());
  CHECK(generate.status == 400);
  CHECK(generate.raw.find("prompt: at least") != std::string::npos);
}

TEST_CASE("http hardening: a second node on the HTTP port of a running one is refused") {
  OpenAiTestNode first;
  const ProcessResult second = run_process(
      {DMOE_NODE_PATH, "--model", (first.work() / "tiny").string(), "--node-id", "second",
       "--placement", (first.work() / "placement.json").string(), "--http", first.http(),
       "--experts", "tcp://127.0.0.1:*", "--insecure", "--expert-memory", "64M"},
      std::chrono::seconds(60));
  INFO("stderr: " << second.err);
  CHECK(second.exit_code == 1);
  CHECK(second.err.find("--http " + first.http()) != std::string::npos);
  CHECK(second.err.find("in use") != std::string::npos);
  // The first one still has every request.
  for (int i = 0; i < 5; ++i) CHECK(first.get("/health").status == 200);
}

}  // namespace dancemoe::testing
