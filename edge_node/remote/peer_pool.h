// PeerPool: the executor's links to its peers' expert services, one
// PeerLink per node id, created on first use and re-created when a new
// placement gives that node another endpoint. Measurements (PeerEstimate)
// survive placement changes as long as the endpoint does. With member keys
// a link pins the peer's current key; a peer that is no longer a member
// gets no call (link() is unavailable) and a changed key re-creates the link.
// A placement naming a peer whose key this node lacks is an operator's
// mistake (a --peer-keys directory without that node's .pub, say) that the
// executor survives by computing those experts here: it is logged at warn
// level, once per peer until its key is known again.
//
// Not thread-safe: owned by the executor's thread, as its sockets.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/base/status.h"
#include "edge_node/holders/holder_table.h"
#include "edge_node/remote/member_keys.h"
#include "edge_node/remote/peer_link.h"

namespace dancemoe::node {

struct PeerPoolOptions {
  std::chrono::milliseconds send_timeout{200};
  int64_t max_message_bytes = int64_t{256} << 20;
  std::shared_ptr<const MemberKeys> members;  // null: plain links (--insecure)
};

class PeerPool {
 public:
  PeerPool(zmq::context_t& context, PeerPoolOptions options)
      : context_(context), options_(options) {}

  // A link replaced here (new endpoint or key) stays alive, as calls in
  // flight may still point at it, until release_retired().
  Result<PeerLink*> link(const PeerInfo& peer);
  // Frees replaced links; call when no call is in flight (between layers).
  void release_retired() { retired_.clear(); }
  // nullptr when no link to that node exists yet.
  PeerLink* find(const std::string& node_id);

 private:
  zmq::context_t& context_;
  PeerPoolOptions options_;
  std::map<std::string, std::unique_ptr<PeerLink>> links_;
  std::vector<std::unique_ptr<PeerLink>> retired_;
  std::set<std::string, std::less<>> warned_no_key_;  // node ids
};

}  // namespace dancemoe::node
