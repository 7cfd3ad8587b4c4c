// HttpListener: an HTTP server with the limits every DanceMoE endpoint keeps
// (the node's API and chat page, the scheduler's dashboard): cpp-httplib
// routes and writes the answers, but the connections are read by a
// ConnectionGate (connection_gate.h) -- one thread that reads each request
// whole under limits on header bytes, header fields, body bytes and
// deadlines -- so the bounded pool of handler threads only ever serves
// complete requests and slow clients cannot exhaust it. The address is
// parsed and bound before anything is served, so that a bad or busy address
// is an error at start-up (never shared with another process: no
// SO_REUSEPORT) and port 0 reports the port it got.
//
// Usage: bind(), add routes and handlers on server(), start(); stop() (or
// the destructor) stops accepting, finishes the requests in progress and
// joins every thread. The routes' handlers run on the pool's threads.
// Not thread-safe itself: one owner starts and stops it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/base/status.h"
#include "common/http/connection_gate.h"
#include "common/http/listen_address.h"

namespace httplib {
class Server;
class ThreadPool;
}  // namespace httplib

namespace dancemoe::http {

struct HttpListenerOptions {
  std::string address = "127.0.0.1:0";  // HOST:PORT; port 0: any free port
  std::string flag = "--http";          // names the setting in errors
  size_t n_threads = 8;                 // handler threads
  size_t max_body_bytes = size_t{1} << 20;
  size_t max_header_bytes = 32 << 10;  // request line and header fields
  size_t max_header_fields = 100;
  size_t max_connections = 512;
  std::chrono::milliseconds header_timeout{10'000};  // the whole head, from its first byte
  std::chrono::milliseconds body_timeout{60'000};    // the whole body, from the end of the head
  std::chrono::milliseconds idle_timeout{5'000};     // keep-alive: until the next request
  size_t max_requests_per_connection = 100;
  std::chrono::milliseconds write_timeout{5'000};  // one write of a response (a stream's chunk)
};

class HttpListener {
 public:
  static Result<std::unique_ptr<HttpListener>> bind(const HttpListenerOptions& options);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Add routes and handlers here before start().
  httplib::Server& server() { return *server_; }
  void start();
  void stop();

  // "127.0.0.1:8080", with the port actually bound.
  const std::string& bound_address() const { return bound_address_; }
  const ListenAddress& address() const { return address_; }
  bool loopback() const { return is_loopback_host(address_.host); }
  // What the gate turned away (431, 408, 413, ...), for metrics.
  const GateCounters& gate_counters() const { return gate_->counters(); }

 private:
  HttpListener() = default;
  void serve(std::unique_ptr<GateConnection> connection);

  HttpListenerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<ConnectionGate> gate_;
  std::unique_ptr<httplib::ThreadPool> pool_;
  ListenAddress address_;
  std::string bound_address_;
  bool started_ = false;
};

}  // namespace dancemoe::http
