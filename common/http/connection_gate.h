// ConnectionGate: the front of every DanceMoE HTTP server (http_listener.h).
// One thread accepts connections and reads each request -- head and body --
// with non-blocking sockets and poll(), and hands only complete requests to
// the handler threads. So a client that trickles its headers (or its body,
// or says nothing) occupies a socket and a few bytes here, never a thread,
// and /health answers while hundreds of slow clients hang on.
//
// Limits (GateOptions), each answered with a short JSON error and the
// connection closed:
//   head bytes (request line + fields) and field count      431
//   the head not complete within head_timeout of the first byte  408
//   (a new connection: of its accept)
//   a body larger than max_body_bytes                        413
//   the body not complete within body_timeout of its head    408
//   Transfer-Encoding on a request (bodies need a length)    411
//   a head that is not HTTP/1.x                              400
//   more than max_connections open, or bodies being received
//   together over max_buffered_bytes                         503
// A keep-alive connection handed back after its response waits idle_timeout
// for the next request's first byte, then is closed quietly. A client that
// sent "Expect: 100-continue" gets the 100 from the gate (the line is
// removed before the handler parses the head).
//
// Threads: start() runs the gate's thread; dispatch is called on it (it
// must only queue the connection); give_back() and stop() may be called
// from any thread. The gate must outlive every GateConnection it made.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/base/unique_fd.h"

namespace dancemoe::http {

struct GateOptions {
  size_t max_connections = 512;  // open at once (waiting and being served)
  size_t max_head_bytes = 32 << 10;
  size_t max_head_fields = 100;
  size_t max_body_bytes = 1 << 20;
  size_t max_buffered_bytes = 256 << 20;  // bodies being received, all together
  std::chrono::milliseconds head_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{5'000};  // keep-alive: until the next request starts
};

// One connection with one complete request, on its way to a handler thread
// and (keep-alive) back. Closes its socket when destroyed.
struct GateConnection {
  UniqueFd fd;
  std::string request;  // exactly one request: head and body
  std::string pending;  // bytes the client sent after it (a pipelined request)
  size_t n_served = 0;  // requests answered on this connection before `request`

  explicit GateConnection(std::atomic<size_t>* open_count) : open_count_(open_count) {}
  ~GateConnection() { open_count_->fetch_sub(1); }
  GateConnection(const GateConnection&) = delete;
  GateConnection& operator=(const GateConnection&) = delete;

 private:
  std::atomic<size_t>* open_count_;
};

// What the gate turned away, by reason (cumulative).
struct GateCounters {
  std::atomic<uint64_t> head_too_large{0};  // bytes or fields
  std::atomic<uint64_t> timed_out{0};       // head or body deadline
  std::atomic<uint64_t> malformed{0};       // 400 and 411
  std::atomic<uint64_t> body_too_large{0};
  std::atomic<uint64_t> over_capacity{0};  // connections or buffered bytes
};

class ConnectionGate {
 public:
  using Dispatch = std::function<void(std::unique_ptr<GateConnection>)>;

  // `listen_fd`: a bound, listening socket (owned from now on).
  ConnectionGate(UniqueFd listen_fd, const GateOptions& options, Dispatch dispatch);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  void start();
  // Stops accepting, closes the connections waiting here and joins the
  // thread. Connections being served are closed when handed back.
  void stop();
  // A served connection that stays open for its next request.
  void give_back(std::unique_ptr<GateConnection> connection);

  size_t n_open() const { return open_count_.load(); }
  const GateCounters& counters() const { return counters_; }

 private:
  struct Waiting;
  using Clock = std::chrono::steady_clock;

  void run();
  void accept_all(Clock::time_point now);
  void take_returned(Clock::time_point now);
  // Reads what `w` has to offer; false when it was closed or handed on.
  bool on_readable(Waiting& w, Clock::time_point now);
  bool advance(Waiting& w, Clock::time_point now);
  void reject(Waiting& w, int status, const std::string& code, const std::string& message,
              Clock::time_point now);
  void release(Waiting& w);

  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // eventfd: give_back() and stop() wake the poll
  GateOptions options_;
  Dispatch dispatch_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_count_{0};
  GateCounters counters_;
  size_t buffered_bytes_ = 0;                      // bodies being received (gate thread only)
  std::vector<std::unique_ptr<Waiting>> waiting_;  // gate thread only
  std::mutex returned_mutex_;
  std::vector<std::unique_ptr<GateConnection>> returned_;
};

}  // namespace dancemoe::http
