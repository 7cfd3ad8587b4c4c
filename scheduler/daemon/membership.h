// Cluster membership: which nodes exist, which are up, and how to reach
// them on the control socket.
//
// A node is identified by Register.node_id. Registering binds the node to
// the ZeroMQ routing id its Register came from; later messages from that
// routing id must carry the same envelope sender. A node is up from its
// Register until it misses `misses` heartbeats (no message at all for
// misses x interval); then it is down and must register again (a node that
// was only partitioned re-registers when told it is unknown, and is
// re-synchronised then).
//
// After a scheduler restart, nodes known from the database are `kUnknown`
// with their last-seen time set to the start: they have the usual
// heartbeat timeout to re-attach before they are declared down (and their
// experts' coverage repaired).
//
// Time is the Clock's steady reading, passed in. Not thread-safe: owned by
// the service loop.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduler/store/records.h"

namespace dancemoe::scheduler {

enum class NodeState { kUp, kDown, kUnknown };
const char* node_state_name(NodeState state);

struct Member {
  store::NodeRecord record;  // the last handshake (devices, endpoints)
  std::string routing_id;    // empty until the node registers with this process
  NodeState state = NodeState::kUnknown;
  int64_t last_seen_ms = 0;  // steady
  int64_t up_since_wall_ms = 0;
  int64_t down_since_wall_ms = 0;
  uint64_t heartbeat_version = 0;  // placement version of its last heartbeat
  uint32_t requests_in_flight = 0;
  std::vector<ExpertRef> resident;  // as registered
  std::string expert_type;          // the precision it holds its experts in (Register)
  // The experts whose weights it can serve from its disk (Register, 1.5):
  // every one unless expert_files_partial; then the flat ids it listed.
  bool expert_files_partial = false;
  std::vector<bool> expert_files;  // [flat id], with expert_files_partial
  bool experts_only = false;       // --role experts: no activations of its own
  const std::string& id() const { return record.node_id; }
};

class Membership {
 public:
  // Nodes from the database, before any registration.
  void load(const std::vector<store::NodeRecord>& nodes, int64_t now_ms);

  // Register (first time or again); returns the member, now up.
  Member& attach(const store::NodeRecord& record, std::vector<ExpertRef> resident,
                 const std::string& routing_id, int64_t now_ms, int64_t now_wall_ms);

  // nullptr when unknown.
  Member* find(const std::string& node_id);
  const Member* find(const std::string& node_id) const;
  // The up member registered from this routing id, or nullptr.
  Member* by_routing(const std::string& routing_id);

  void touch(Member& member, int64_t now_ms) { member.last_seen_ms = now_ms; }

  // Marks down every up or unknown node silent for longer than timeout_ms;
  // returns the ids of the nodes that were up (or unknown) and are now down.
  std::vector<std::string> expire(int64_t now_ms, int64_t timeout_ms, int64_t now_wall_ms);

  // Marks one node down now (its key was revoked); false when it was not up
  // or unknown.
  bool mark_down(const std::string& node_id, int64_t now_wall_ms);
  // Removes a node that is not up (`dancemoe nodes forget`); false when it
  // is up or unknown to this process.
  bool forget(const std::string& node_id);

  // The earliest steady time at which expire() could change something.
  int64_t next_expiry_ms(int64_t timeout_ms) const;

  std::vector<const Member*> up() const;
  const std::map<std::string, Member>& all() const { return members_; }
  // Bumped on every join and every node going down (cold start waits for quiet).
  uint64_t generation() const { return generation_; }

 private:
  std::map<std::string, Member> members_;
  std::map<std::string, std::string> by_routing_;  // routing id -> node id
  uint64_t generation_ = 0;
};

}  // namespace dancemoe::scheduler
