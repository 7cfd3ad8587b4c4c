// The scheduler's service loop: one thread owns the ZeroMQ ROUTER control
// socket, the SchedulerService and (through it) the SQLite store, so every
// store write happens on this thread and no lock is needed anywhere. The
// loop polls the socket with a timeout bounded by the service's next
// deadline, hands each message to the service, sends what it produced,
// and ticks the timed work.
//
// Other threads reach the service only through a ServiceInbox
// (service_inbox.h): the loop polls its eventfd beside the socket and runs
// the waiting jobs between messages. LoopMetrics, when given, times every
// message and tick.
//
// A report is committed to SQLite before its Ack is sent; a stop request
// (SIGTERM/SIGINT set the flag) is seen between messages, so a transaction
// in progress always finishes and the database is closed cleanly.
//
// Why one thread for the store and the socket: a report costs tens of
// microseconds to validate and commit (WAL, no fsync with sync=normal),
// far below the 50 ms latency target even at 10x the load, and a
// single owner keeps ordering trivial (a Ready is never processed before
// the Register it follows). A placement round (statistics read, solve,
// gate) runs on the same thread and delays ingest by its duration
// (bench_scheduler measures both).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "common/base/status.h"
#include "common/net/curve_keys.h"
#include "common/net/zap_handler.h"
#include "scheduler/daemon/loop_metrics.h"
#include "scheduler/daemon/service.h"
#include "scheduler/daemon/service_inbox.h"

namespace dancemoe::scheduler {

struct ControlServerOptions {
  std::string endpoint = "tcp://*:5550";
  int64_t max_message_bytes = int64_t{8} << 20;  // envelopes larger are refused with an Error
  // CURVE server with this key pair, admitting the service's keys (its
  // KeyRing's allowlist) through a ZAP handler; nullopt: plain (--insecure).
  std::optional<net::CurveKeyPair> curve;
};

class ControlServer {
 public:
  static Result<std::unique_ptr<ControlServer>> bind(const ControlServerOptions& options,
                                                     SchedulerService* service);

  // The endpoint actually bound, with a wildcard host replaced by 127.0.0.1
  // so that a local client can use it.
  const std::string& endpoint() const { return endpoint_; }

  // Both optional, set before run(); they must outlive it. run() closes the
  // inbox when it returns.
  void set_inbox(ServiceInbox* inbox) { inbox_ = inbox; }
  void set_metrics(LoopMetrics* metrics) { metrics_ = metrics; }

  // Runs until `stop` becomes true.
  Status run(const std::atomic<bool>& stop);

 private:
  ControlServer() = default;
  void flush();
  void handle(const net::ReceivedMessage& message);
  void tick();

  zmq::context_t context_{1};
  std::unique_ptr<net::ZapHandler> zap_;  // before socket_: stops after it closes
  zmq::socket_t socket_;
  SchedulerService* service_ = nullptr;
  ServiceInbox* inbox_ = nullptr;
  LoopMetrics* metrics_ = nullptr;
  proto::DecodeLimits limits_;
  std::string endpoint_;
};

// Writes {"control": endpoint, "http": HOST:PORT (when serving)} to `path`
// atomically (temporary + rename).
Status write_ready_file(const std::string& path, const std::string& endpoint,
                        const std::string& http = "");

}  // namespace dancemoe::scheduler
