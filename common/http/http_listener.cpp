#include "common/http/http_listener.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>

namespace dancemoe::http {

Result<std::unique_ptr<HttpListener>> HttpListener::bind(const HttpListenerOptions& options) {
  DMOE_ASSIGN_OR_RETURN(ListenAddress address, parse_listen_address(options.address, options.flag));
  std::unique_ptr<HttpListener> listener(new HttpListener());
  listener->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *listener->server_;
  const size_t n_threads = std::max<size_t>(options.n_threads, 1);
  server.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  server.set_payload_max_length(options.max_body_bytes);
  // cpp-httplib's default sets SO_REUSEPORT, which lets a second process
  // bind the same port and silently share its connections. SO_REUSEADDR
  // alone still allows a restart while old connections linger in TIME_WAIT.
  server.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_read_timeout(options.read_timeout);
  server.set_write_timeout(options.write_timeout);
  const int bound = address.port == 0
                        ? server.bind_to_any_port(address.host)
                        : (server.bind_to_port(address.host, address.port) ? address.port : -1);
  if (bound < 0) {
    return unavailable(options.flag + ": cannot bind " + options.address +
                       " (in use, or not an address of this machine)");
  }
  listener->bound_address_ = address.host + ":" + std::to_string(bound);
  address.port = bound;
  listener->address_ = std::move(address);
  return listener;
}

void HttpListener::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([raw = server_.get()] { raw->listen_after_bind(); });
  // httplib's stop() does nothing until the server runs: wait for it, so a
  // stop() right after start() cannot leave the serving thread unjoinable.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!server_->is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

HttpListener::~HttpListener() { stop(); }

void HttpListener::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace dancemoe::http
