// NodeAgent: one `dancemoe-node` process wired together (DESIGN.md §2-3):
// it builds the node's parts (node_parts.h) in order, serves HTTP through
// NodeHttpBackend, and runs the standalone placement reloads.
//
// start() reads the keys (docs/security.md: the node's key pair, the
// scheduler's pinned key or the standalone --peer-keys, and a ZAP handler
// admitting the members), loads the dense weights, applies the standalone placement (if
// any), binds the expert service and the HTTP API, starts the scheduler
// link (attached mode) and writes the ready file:
//   {"node_id", "expert_endpoint" (bound), "advertise", "http" (HOST:PORT),
//    "pid", "mode", "placement_version"}
// The ready file means "endpoints bound"; GET /health says whether prompts
// can be answered (standalone: always; attached: attached and a placement
// committed).
//
// Threads: HTTP handler threads run generations one at a time (PromptRunner's
// mutex), so the executor's peer sockets and the main ThreadPool are used by
// one thread at a time, handed over under that mutex; the expert service,
// the scheduler link and the migration loader have their own threads.
// Owns everything; stop() (or the destructor) shuts down in reverse order.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <zmq.hpp>

#include "common/base/status.h"
#include "edge_node/agent/node_http_backend.h"
#include "edge_node/agent/node_options.h"
#include "edge_node/agent/node_parts.h"
#include "edge_node/http/http_server.h"

namespace dancemoe::node {

class NodeAgent {
 public:
  static Result<std::unique_ptr<NodeAgent>> start(const NodeOptions& options);
  ~NodeAgent();

  // Standalone mode: reads the placement file again and migrates to it
  // (prepare, then commit as soon as it is loaded). Called on SIGHUP.
  Status reload_placement();
  // Commits a standalone reload whose loading finished, and repeats the
  // --insecure warning every minute (called by the main loop).
  void poll();
  // True when the scheduler refused this node (the process should exit).
  bool refused() const;
  void stop();

  const std::string& expert_endpoint() const;
  const std::string& http_address() const;

 private:
  explicit NodeAgent(const NodeOptions& options);
  // init() runs the steps below in order.
  Status init();
  Status load_keys();
  Status build_runtime();
  Status start_expert_service();
  Status apply_placement_file();
  void start_scheduler_link();
  Status write_ready_file() const;
  proto::Register registration() const;

  NodeOptions options_;
  int64_t next_insecure_warning_ms_ = 0;
  std::unique_ptr<NodeParts> parts_;
  std::unique_ptr<NodeHttpBackend> backend_;
};

}  // namespace dancemoe::node
