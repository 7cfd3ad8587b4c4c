// PeerPool: the executor's links to its peers' expert services, one
// PeerLink per node id, created on first use and re-created when a new
// placement gives that node another endpoint. Measurements (PeerEstimate)
// survive placement changes as long as the endpoint does.
//
// Not thread-safe: owned by the executor's thread, as its sockets.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "common/base/status.h"
#include "edge_node/holders/holder_table.h"
#include "edge_node/remote/peer_link.h"

namespace dancemoe::node {

struct PeerPoolOptions {
  std::chrono::milliseconds send_timeout{200};
  int64_t max_message_bytes = int64_t{256} << 20;
};

class PeerPool {
 public:
  PeerPool(zmq::context_t& context, PeerPoolOptions options)
      : context_(context), options_(options) {}

  Result<PeerLink*> link(const PeerInfo& peer);
  // nullptr when no link to that node exists yet.
  PeerLink* find(const std::string& node_id);

 private:
  zmq::context_t& context_;
  PeerPoolOptions options_;
  std::map<std::string, std::unique_ptr<PeerLink>> links_;
};

}  // namespace dancemoe::node
