// Helpers for the OpenAI-API integration tests (header-only: the suite
// compiles only *_test.cpp): one standalone node holding every expert of a
// synthetic model, raw HTTP over a socket (to disconnect mid-request), and
// reading /metrics samples. Names are prefixed OpenAi to stay clear of the
// other suites' helpers (one binary links every integration test).
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/node_cluster.h"

namespace dancemoe::testing {

class OpenAiTestNode {
 public:
  // A node serving `preset` with every expert, extra flags appended; with
  // `chat_template` (a file of tests/fixtures/chat_templates), that model's
  // template replaces the synthetic tokenizer's ChatML one.
  explicit OpenAiTestNode(std::vector<std::string> extra = {}, const std::string& preset = "tiny",
                          const std::string& http = "127.0.0.1:0",
                          const std::string& chat_template = "")
      : work_("openai_node") {
    model_ = work_.path() / preset;
    SyntheticModelSpec spec;
    spec.preset = preset;
    write_model(spec, model_);
    if (!chat_template.empty()) {
      std::ifstream source(source_dir() / "tests/fixtures/chat_templates" / chat_template);
      REQUIRE(source.good());
      const std::string text((std::istreambuf_iterator<char>(source)),
                             std::istreambuf_iterator<char>());
      std::ifstream config_in(model_ / "tokenizer_config.json");
      json tokenizer_config = json::parse(config_in);
      tokenizer_config["chat_template"] = text;
      write_json(model_ / "tokenizer_config.json", tokenizer_config);
    }
    std::ifstream in(model_ / "config.json");
    const json config = json::parse(in);
    const int32_t n_experts = config["num_experts"].get<int32_t>();
    PlacementSpec all;
    for (int32_t e = 0; e < n_experts; ++e) all.experts["solo"].push_back(e);
    const int port = free_tcp_port();
    write_json(
        work_.path() / "placement.json",
        placement_json(all, moe_layers_of(model_), n_experts, {{"solo", endpoint_of(port)}}));
    std::vector<std::string> flags = {"--model",     model_.string(),
                                      "--experts",   endpoint_of(port),
                                      "--http",      http,
                                      "--threads",   "1",
                                      "--placement", (work_.path() / "placement.json").string()};
    flags.insert(flags.end(), extra.begin(), extra.end());
    node_ = std::make_unique<NodeProcess>(work_.path(), "solo", flags);
    REQUIRE(node_->wait_ready());
    std::ifstream ready(work_.path() / "ready_solo.json");
    http_ = json::parse(ready)["http"].get<std::string>();
  }

  NodeProcess& node() { return *node_; }
  const std::string& http() const { return http_; }
  std::string base_url() const { return "http://" + http_; }
  std::string model_name() const { return model_.filename().string(); }
  const std::filesystem::path& work() const { return work_.path(); }

  // (status, parsed body; discarded JSON when the body is not JSON, raw body)
  struct Reply {
    int status = -1;
    json body;
    std::string raw;
  };
  Reply post(const std::string& path, const std::string& body,
             const std::string& api_key = "") const {
    httplib::Client client(base_url());
    client.set_read_timeout(120, 0);
    httplib::Headers headers;
    if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
    auto res = client.Post(path.c_str(), headers, body, "application/json");
    if (!res) return {};
    return {res->status, json::parse(res->body, nullptr, false), res->body};
  }
  Reply get(const std::string& path, const std::string& api_key = "") const {
    httplib::Client client(base_url());
    client.set_read_timeout(30, 0);
    httplib::Headers headers;
    if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
    auto res = client.Get(path.c_str(), headers);
    if (!res) return {};
    return {res->status, json::parse(res->body, nullptr, false), res->body};
  }

  // The value of one /metrics sample line (exact name with labels), -1 if absent.
  // Request counts are taken after the answer is written (httplib's
  // logger), so a test reading them right after its reply uses metric_is().
  double metric(const std::string& sample) const {
    const Reply r = get("/metrics");
    REQUIRE(r.status == 200);
    const std::string key = sample + " ";
    const size_t at = r.raw.find("\n" + key);
    if (at == std::string::npos) return -1;
    return std::stod(r.raw.substr(at + 1 + key.size()));
  }

  bool metric_is(const std::string& sample, double expected) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (metric(sample) != expected) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  // Tokens the engine ran so far (prompt and generated), from /v1/stats.
  uint64_t forward_tokens() const {
    const Reply r = get("/v1/stats");
    REQUIRE(r.status == 200);
    return r.body["activations"]["total"]["tokens"].get<uint64_t>();
  }
  bool engine_busy() const {
    const Reply r = get("/v1/stats");
    REQUIRE(r.status == 200);
    return r.body["http_queue"]["running"].get<bool>() ||
           r.body["http_queue"]["waiting"].get<int64_t>() > 0;
  }

 private:
  TempDir work_;
  std::filesystem::path model_;
  std::unique_ptr<NodeProcess> node_;
  std::string http_;
};

// A raw HTTP/1.1 request on its own socket, so a test can read part of the
// answer and then hang up like a client that went away.
class OpenAiRawClient {
 public:
  OpenAiRawClient(const std::string& host_port, const std::string& path, const std::string& body) {
    const size_t colon = host_port.rfind(':');
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1))));
    REQUIRE(::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &addr.sin_addr) == 1);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    const std::string request =
        "POST " + path + " HTTP/1.1\r\nHost: " + host_port +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + body;
    REQUIRE(::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
  }
  ~OpenAiRawClient() { hang_up(); }

  // Reads until `needle` arrived (true) or `timeout` passed / the server closed (false).
  bool read_until(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    timeval tv{0, 100'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    while (received_.find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return false;
      if (n > 0) received_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  const std::string& received() const { return received_; }
  void hang_up() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::string received_;
};

// Polls `condition` every 20 ms for up to `timeout`.
template <typename F>
bool openai_eventually(F condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

}  // namespace dancemoe::testing
