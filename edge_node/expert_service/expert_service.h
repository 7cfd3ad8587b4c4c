// ExpertService: this node's experts served to peers (DESIGN.md §3, §7).
//
// One frontend thread owns the ROUTER socket bound to the expert endpoint
// and an inproc PULL socket; it hands each inbound message to a bounded job
// queue and forwards the workers' replies (pushed on their own inproc PUSH
// sockets -- one owner thread per socket) back through the ROUTER. Worker
// threads each own an ExpertRequestHandler with its own ExpertComputer
// (engines and thread pools on every device of the node), so expert compute
// for peers runs each expert on the device that holds it and never shares a
// pool with the node's own forward pass (a pool has one owner thread at a
// time).
//
// Messages that arrived together are handled together
// (ExpertRequestHandler::handle_many): the calls of one layer from several
// peers are computed in one pass, each expert's weights read once. (A
// worker takes every queued message at once.)
//
// A full queue is answered at once with a resource_exhausted Error, so a
// flood cannot pile up work; anything malformed gets an Error reply
// (request_handler.h). stop() (or the destructor) joins every thread.
//
// With member keys (docs/security.md) the ROUTER is a CURVE server: the
// context's ZAP handler admits only current members, and every message is
// checked again against the members of the moment -- one from a key that
// is not (or no longer) a member is dropped unanswered and counted
// (ServiceCounters::refused), so a revoked node's open connection stops
// working as soon as the scheduler's members reach this node.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/inference/compute_precision.h"
#include "common/inference/expert_store.h"
#include "common/model/model_config.h"
#include "edge_node/expert_service/request_handler.h"
#include "edge_node/remote/member_keys.h"

namespace dancemoe::node {

struct ExpertServiceOptions {
  std::string bind_endpoint = "tcp://*:5551";
  int n_workers = 1;
  // Each worker's computer, with engines of its own on every device of the
  // node (ModelRuntime::new_expert_computer). Null: one CPU device with
  // threads_per_worker threads at `precision`.
  std::function<Result<std::unique_ptr<ExpertComputer>>()> make_computer;
  int threads_per_worker = 1;
  ComputePrecision precision = ComputePrecision::kBF16;
  ServiceLimits limits;
  ServiceIdentity identity;
  size_t max_queued = 64;  // messages waiting for a worker
  // Who may call (null or insecure: anyone). The context's ZAP handler must
  // admit the same allowlist.
  std::shared_ptr<const MemberKeys> members;
};

class ExpertService {
 public:
  // Binds and starts the threads; unavailable when the endpoint cannot be bound.
  static Result<std::unique_ptr<ExpertService>> start(zmq::context_t& context,
                                                      const ModelConfig& config,
                                                      const ExpertStore& store,
                                                      ExpertServiceOptions options);
  ~ExpertService();
  ExpertService(const ExpertService&) = delete;
  ExpertService& operator=(const ExpertService&) = delete;

  // The endpoint actually bound ("tcp://127.0.0.1:41234" for "tcp://127.0.0.1:*").
  const std::string& bound_endpoint() const { return bound_endpoint_; }
  const ServiceCounters& counters() const { return counters_; }
  void stop();

 private:
  struct Job;
  ExpertService(zmq::context_t& context, const ModelConfig& config, const ExpertStore& store,
                ExpertServiceOptions options);
  void frontend_loop(zmq::socket_t router, zmq::socket_t replies);
  void worker_loop(int worker_idx);
  Result<std::unique_ptr<ExpertComputer>> new_computer() const;
  // One worker: receive, compute and answer on the frontend thread.
  void inline_loop(zmq::socket_t router);
  // The resource_exhausted Error for a call refused by a full queue.
  void send_overloaded(zmq::socket_t& router, const Job& job);
  // False (counted) for a message from a key that is not a current member.
  bool admitted(const net::ReceivedMessage& m);

  zmq::context_t& context_;
  const ModelConfig& config_;
  const ExpertStore& store_;
  ExpertServiceOptions options_;
  ExpertBlobCache blobs_;
  ServiceCounters counters_;
  std::string bound_endpoint_;
  std::string replies_endpoint_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::unique_ptr<Job>> queue_;
  std::thread frontend_;
  std::vector<std::thread> workers_;
};

}  // namespace dancemoe::node
