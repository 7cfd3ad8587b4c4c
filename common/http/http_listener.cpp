#include "common/http/http_listener.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/http/request_stream.h"

namespace dancemoe::http {
namespace {

// cpp-httplib's request processing without its accept loop and socket
// reads: the gate has read the request, this routes and answers it.
class RoutingServer : public httplib::Server {
 public:
  using httplib::Server::process_request;
  // httplib stops writing a streamed (chunked) answer as soon as its own
  // listening socket is invalid -- its sign of shutting down. Ours is not
  // httplib's, so the listener marks the server serving (with its socket's
  // descriptor, never closed by httplib: its stop() acts only after its own
  // listen) while it runs, and not serving once it stops.
  void set_serving(int listening_fd) { svr_sock_ = listening_fd; }
  void set_stopping() { svr_sock_ = INVALID_SOCKET; }
};

// A listening TCP socket on host:port (port 0: any), or why not.
Result<UniqueFd> listen_on(const ListenAddress& address, const std::string& flag,
                           const std::string& text) {
  std::string host = address.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0) {
    return unavailable(flag + ": cannot bind " + text + " (not an address of this machine)");
  }
  int error = EADDRNOTAVAIL;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) continue;
    // SO_REUSEADDR (a restart while old connections linger in TIME_WAIT),
    // never SO_REUSEPORT: that would let a second process bind this port and
    // silently take half of its connections.
    const int yes = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), SOMAXCONN) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    error = errno;
  }
  ::freeaddrinfo(found);
  return unavailable(flag + ": cannot bind " + text +
                     (error == EADDRINUSE ? " (in use by another process)"
                                          : " (not an address of this machine: " +
                                                std::string(std::strerror(error)) + ")"));
}

int bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

}  // namespace

Result<std::unique_ptr<HttpListener>> HttpListener::bind(const HttpListenerOptions& options) {
  DMOE_ASSIGN_OR_RETURN(ListenAddress address, parse_listen_address(options.address, options.flag));
  DMOE_ASSIGN_OR_RETURN(UniqueFd fd, listen_on(address, options.flag, options.address));
  std::unique_ptr<HttpListener> listener(new HttpListener());
  listener->options_ = options;
  listener->options_.n_threads = std::max<size_t>(options.n_threads, 1);
  auto server = std::make_unique<RoutingServer>();
  server->set_payload_max_length(options.max_body_bytes);
  server->set_write_timeout(options.write_timeout);
  // What the Keep-Alive header of each answer announces.
  server->set_keep_alive_max_count(options.max_requests_per_connection);
  server->set_keep_alive_timeout(
      std::chrono::duration_cast<std::chrono::seconds>(options.idle_timeout).count());
  server->set_serving(fd.get());
  listener->server_ = std::move(server);
  address.port = bound_port(fd.get());
  listener->bound_address_ = address.host + ":" + std::to_string(address.port);
  listener->address_ = std::move(address);

  GateOptions gate;
  gate.max_connections = options.max_connections;
  gate.max_head_bytes = options.max_header_bytes;
  gate.max_head_fields = options.max_header_fields;
  gate.max_body_bytes = options.max_body_bytes;
  gate.head_timeout = options.header_timeout;
  gate.body_timeout = options.body_timeout;
  gate.idle_timeout = options.idle_timeout;
  HttpListener* raw = listener.get();
  listener->gate_ = std::make_unique<ConnectionGate>(
      std::move(fd), gate, [raw](std::unique_ptr<GateConnection> connection) {
        // httplib's pool takes copyable tasks: the connection rides in a
        // shared holder (closed by it if the task never runs).
        auto holder = std::make_shared<std::unique_ptr<GateConnection>>(std::move(connection));
        raw->pool_->enqueue([raw, holder] { raw->serve(std::move(*holder)); });
      });
  return listener;
}

void HttpListener::serve(std::unique_ptr<GateConnection> connection) {
  RequestStream stream(connection->fd.get(), std::move(connection->request),
                       options_.write_timeout);
  const bool last = connection->n_served + 1 >= options_.max_requests_per_connection;
  bool client_closes = false;  // the request said "Connection: close" (or was HTTP/1.0)
  const bool answered =
      static_cast<RoutingServer&>(*server_).process_request(stream, last, client_closes, nullptr);
  if (!answered || last || client_closes) return;  // closed by the connection's destructor
  connection->request.clear();
  ++connection->n_served;
  gate_->give_back(std::move(connection));
}

void HttpListener::start() {
  if (started_) return;
  started_ = true;
  pool_ = std::make_unique<httplib::ThreadPool>(options_.n_threads);
  gate_->start();
}

HttpListener::~HttpListener() { stop(); }

void HttpListener::stop() {
  if (!started_) return;
  started_ = false;
  static_cast<RoutingServer&>(*server_).set_stopping();  // streamed answers end
  gate_->stop();      // no new requests; connections handed back from now on are closed
  pool_->shutdown();  // finishes the requests being served and joins
}

}  // namespace dancemoe::http
