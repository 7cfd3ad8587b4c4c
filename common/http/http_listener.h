// HttpListener: a cpp-httplib server with the limits every DanceMoE HTTP
// endpoint keeps (the node's API and chat page, the scheduler's dashboard):
// a bounded pool of handler threads, a bound on request bodies (headers and
// the request line are bounded by cpp-httplib itself: 8 KiB each), read and
// write timeouts so a client that stalls cannot hold a thread, and an
// address parsed and bound before anything is served, so that a bad or busy
// address is an error at start-up (never shared with another process:
// no SO_REUSEPORT) and port 0 reports the port it got.
//
// Usage: bind(), add routes and handlers on server(), start(); stop() (or
// the destructor) stops accepting, finishes the requests in progress and
// joins the serving thread. The routes' handlers run on the pool's threads.
// Not thread-safe itself: one owner starts and stops it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "common/base/status.h"
#include "common/http/listen_address.h"

namespace httplib {
class Server;
}

namespace dancemoe::http {

struct HttpListenerOptions {
  std::string address = "127.0.0.1:0";  // HOST:PORT; port 0: any free port
  std::string flag = "--http";          // names the setting in errors
  size_t n_threads = 8;                 // handler threads
  size_t max_body_bytes = size_t{1} << 20;
  std::chrono::seconds read_timeout{5};   // one read of a request
  std::chrono::seconds write_timeout{5};  // one write of a response (a stream's chunk)
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

 private:
  HttpListener() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  ListenAddress address_;
  std::string bound_address_;
};

}  // namespace dancemoe::http
