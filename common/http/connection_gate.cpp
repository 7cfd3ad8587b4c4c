#include "common/http/connection_gate.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "common/http/request_head.h"

namespace dancemoe::http {
namespace {

constexpr size_t kReadChunk = 16 << 10;
// After an error answer, what the client still sends is read and dropped
// for this long, so closing does not reset the connection before the
// client has read the answer.
constexpr std::chrono::milliseconds kDrainTime{1000};
// accept() failed for lack of descriptors: try again after this.
constexpr std::chrono::milliseconds kAcceptPause{100};

const char* reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Service Unavailable";
  }
}

void send_all_nonblocking(int fd, const std::string& bytes) {
  // Best effort: a fresh socket's send buffer holds a short answer; a
  // client that does not read it loses it.
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

std::string error_response(int status, const std::string& code, const std::string& message) {
  // The shape of both servers' errors: {"error": {"code", "message"}}, with
  // OpenAI's "type" so that its clients show the message.
  const nlohmann::json body = {
      {"error",
       {{"code", code},
        {"message", message},
        {"type", status >= 500 ? "server_error" : "invalid_request_error"}}}};
  const std::string text = body.dump();
  return "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
         "\r\nConnection: close\r\n\r\n" + text;
}

}  // namespace

struct ConnectionGate::Waiting {
  enum class Phase { kIdle, kHead, kBody, kDraining };
  std::unique_ptr<GateConnection> connection;
  Phase phase = Phase::kHead;
  Clock::time_point deadline;
  size_t searched = 0;  // the head's end is not before this offset
  RequestHead head;
  size_t reserved = 0;  // bytes of buffered_bytes_ held for the body
  bool done = false;    // closed or handed on: dropped from waiting_
};

ConnectionGate::ConnectionGate(UniqueFd listen_fd, const GateOptions& options, Dispatch dispatch)
    : listen_fd_(std::move(listen_fd)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      options_(options),
      dispatch_(std::move(dispatch)) {}

ConnectionGate::~ConnectionGate() { stop(); }

void ConnectionGate::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void ConnectionGate::stop() {
  stopping_ = true;
  const uint64_t one = 1;
  if (wake_fd_.valid()) (void)!::write(wake_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(returned_mutex_);
  returned_.clear();
}

void ConnectionGate::give_back(std::unique_ptr<GateConnection> connection) {
  {
    std::lock_guard<std::mutex> lock(returned_mutex_);
    if (stopping_) return;  // closed by its destructor
    returned_.push_back(std::move(connection));
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void ConnectionGate::release(Waiting& w) {
  buffered_bytes_ -= w.reserved;
  w.reserved = 0;
}

void ConnectionGate::reject(Waiting& w, int status, const std::string& code,
                            const std::string& message, Clock::time_point now) {
  release(w);
  send_all_nonblocking(w.connection->fd.get(), error_response(status, code, message));
  ::shutdown(w.connection->fd.get(), SHUT_WR);
  w.connection->pending.clear();
  w.phase = Waiting::Phase::kDraining;
  w.deadline = now + kDrainTime;
}

void ConnectionGate::accept_all(Clock::time_point now) {
  while (true) {
    const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN, or out of descriptors (run() pauses accepting)
    }
    const int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // streamed chunks go at once
    open_count_.fetch_add(1);
    auto w = std::make_unique<Waiting>();
    w->connection = std::make_unique<GateConnection>(&open_count_);
    w->connection->fd = UniqueFd(fd);
    w->deadline = now + options_.head_timeout;
    if (open_count_.load() > options_.max_connections) {
      counters_.over_capacity.fetch_add(1);
      reject(*w, 503, "too_many_connections",
             "the server has " + std::to_string(options_.max_connections) +
                 " connections open, its limit: try again later",
             now);
    }
    waiting_.push_back(std::move(w));
  }
}

void ConnectionGate::take_returned(Clock::time_point now) {
  std::vector<std::unique_ptr<GateConnection>> returned;
  {
    std::lock_guard<std::mutex> lock(returned_mutex_);
    returned.swap(returned_);
  }
  for (auto& connection : returned) {
    auto w = std::make_unique<Waiting>();
    w->connection = std::move(connection);
    w->phase = Waiting::Phase::kIdle;
    w->deadline = now + options_.idle_timeout;
    if (advance(*w, now)) waiting_.push_back(std::move(w));
  }
}

bool ConnectionGate::on_readable(Waiting& w, Clock::time_point now) {
  std::string& pending = w.connection->pending;
  char buffer[kReadChunk];
  bool closed = false;
  while (true) {
    size_t room = sizeof buffer;
    if (w.phase != Waiting::Phase::kDraining) {
      // Never hold more than the request being read (and a head after it).
      const size_t cap = w.phase == Waiting::Phase::kBody
                             ? w.head.head_bytes + w.head.content_length + options_.max_head_bytes
                             : options_.max_head_bytes + 4;
      if (pending.size() >= cap) break;
      room = std::min(room, cap - pending.size());
    }
    const ssize_t n = ::recv(w.connection->fd.get(), buffer, room, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // the client closed its side (or reset the connection)
      closed = true;
      break;
    }
    if (w.phase != Waiting::Phase::kDraining) pending.append(buffer, static_cast<size_t>(n));
  }
  // A client may send a whole request and then close its sending side: the
  // request is still served (it can read the answer).
  if (w.phase != Waiting::Phase::kDraining && !advance(w, now)) return false;
  if (closed && !w.done) {
    release(w);
    w.done = true;
  }
  return !w.done;
}

bool ConnectionGate::advance(Waiting& w, Clock::time_point now) {
  std::string& pending = w.connection->pending;
  if (w.phase == Waiting::Phase::kIdle || w.phase == Waiting::Phase::kHead) {
    // Blank lines before a request line are allowed (RFC 9112 2.2).
    size_t blank = 0;
    while (pending.compare(blank, 2, "\r\n") == 0) blank += 2;
    pending.erase(0, blank);
    if (pending.empty()) return true;
    if (w.phase == Waiting::Phase::kIdle) {
      w.phase = Waiting::Phase::kHead;
      w.deadline = now + options_.head_timeout;
      w.searched = 0;
    }
    if (find_head_end(pending, w.searched) == std::string::npos) {
      w.searched = pending.size() > 3 ? pending.size() - 3 : 0;
      if (pending.size() >= options_.max_head_bytes) {
        counters_.head_too_large.fetch_add(1);
        reject(w, 431, "header_too_large",
               "the request's headers are larger than " + std::to_string(options_.max_head_bytes) +
                   " bytes",
               now);
      }
      return true;
    }
    w.head = scan_request_head(pending, {options_.max_head_bytes, options_.max_head_fields});
    switch (w.head.verdict) {
      case HeadVerdict::kIncomplete:
      case HeadVerdict::kTooLarge:
        counters_.head_too_large.fetch_add(1);
        reject(w, 431, "header_too_large",
               "the request's headers are larger than " + std::to_string(options_.max_head_bytes) +
                   " bytes",
               now);
        return true;
      case HeadVerdict::kTooManyFields:
        counters_.head_too_large.fetch_add(1);
        reject(w, 431, "too_many_headers",
               "the request has more than " + std::to_string(options_.max_head_fields) +
                   " header fields",
               now);
        return true;
      case HeadVerdict::kMalformed:
        counters_.malformed.fetch_add(1);
        reject(w, 400, "malformed_request", "not an HTTP/1.1 request: " + w.head.problem, now);
        return true;
      case HeadVerdict::kHasTransferEncoding:
        counters_.malformed.fetch_add(1);
        reject(w, 411, "length_required",
               "request bodies must be sent with Content-Length (no Transfer-Encoding)", now);
        return true;
      case HeadVerdict::kComplete:
        break;
    }
    if (w.head.content_length > options_.max_body_bytes) {
      counters_.body_too_large.fetch_add(1);
      reject(w, 413, "body_too_large",
             "the body (" + std::to_string(w.head.content_length) +
                 " bytes) is larger than the limit of " + std::to_string(options_.max_body_bytes) +
                 " bytes",
             now);
      return true;
    }
    if (buffered_bytes_ + w.head.content_length > options_.max_buffered_bytes) {
      counters_.over_capacity.fetch_add(1);
      reject(w, 503, "server_busy",
             "the server is receiving too many request bodies at once: try again later", now);
      return true;
    }
    w.reserved = w.head.content_length;
    buffered_bytes_ += w.reserved;
    w.phase = Waiting::Phase::kBody;
    w.deadline = now + options_.body_timeout;
    if (w.head.expect_continue) {
      pending.erase(w.head.expect_begin, w.head.expect_end - w.head.expect_begin);
      w.head.head_bytes -= w.head.expect_end - w.head.expect_begin;
      if (pending.size() < w.head.head_bytes + w.head.content_length) {
        send_all_nonblocking(w.connection->fd.get(), "HTTP/1.1 100 Continue\r\n\r\n");
      }
    }
  }
  if (w.phase != Waiting::Phase::kBody) return true;
  const size_t need = w.head.head_bytes + w.head.content_length;
  if (pending.size() < need) return true;
  release(w);
  GateConnection& c = *w.connection;
  c.request = pending.substr(0, need);
  c.pending = pending.substr(need);
  w.done = true;
  dispatch_(std::move(w.connection));
  return false;
}

void ConnectionGate::run() {
  Clock::time_point accept_paused_until{};
  std::vector<pollfd> fds;
  while (!stopping_) {
    Clock::time_point now = Clock::now();
    take_returned(now);
    fds.clear();
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    const bool accepting = now >= accept_paused_until;
    fds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});
    Clock::time_point next = now + std::chrono::seconds(1);
    for (const auto& w : waiting_) {
      fds.push_back({w->connection->fd.get(), POLLIN | POLLRDHUP, 0});
      next = std::min(next, w->deadline);
    }
    if (!accepting) next = std::min(next, accept_paused_until);
    const auto wait_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait_ms, 0)));
    if (n < 0 && errno != EINTR) break;
    now = Clock::now();
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      (void)!::read(wake_fd_.get(), &count, sizeof count);
    }
    for (size_t i = 0; i < waiting_.size(); ++i) {
      Waiting& w = *waiting_[i];
      if (fds[i + 2].revents != 0) on_readable(w, now);
      if (w.done || now < w.deadline) continue;
      switch (w.phase) {
        case Waiting::Phase::kHead:
        case Waiting::Phase::kBody:
          counters_.timed_out.fetch_add(1);
          reject(w, 408, "request_timeout",
                 w.phase == Waiting::Phase::kHead
                     ? "the request's headers did not arrive within " +
                           std::to_string(options_.head_timeout.count()) + " ms"
                     : "the request's body did not arrive within " +
                           std::to_string(options_.body_timeout.count()) + " ms",
                 now);
          break;
        case Waiting::Phase::kIdle:
        case Waiting::Phase::kDraining:
          release(w);
          w.done = true;  // closed quietly
          break;
      }
    }
    waiting_.erase(
        std::remove_if(waiting_.begin(), waiting_.end(), [](const auto& w) { return w->done; }),
        waiting_.end());
    if (accepting && (fds[1].revents & POLLIN)) {
      accept_all(now);
      if (errno == EMFILE || errno == ENFILE) accept_paused_until = now + kAcceptPause;
    }
  }
  waiting_.clear();
  listen_fd_.reset();
}

}  // namespace dancemoe::http
