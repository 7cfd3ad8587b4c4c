#include "scheduler/daemon/membership.h"

#include <limits>

namespace dancemoe::scheduler {

const char* node_state_name(NodeState state) {
  switch (state) {
    case NodeState::kUp:
      return "up";
    case NodeState::kDown:
      return "down";
    case NodeState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

void Membership::load(const std::vector<store::NodeRecord>& nodes, int64_t now_ms) {
  for (const store::NodeRecord& record : nodes) {
    Member& m = members_[record.node_id];
    m.record = record;
    m.state = NodeState::kUnknown;
    m.last_seen_ms = now_ms;
  }
}

Member& Membership::attach(const store::NodeRecord& record, std::vector<ExpertRef> resident,
                           const std::string& routing_id, int64_t now_ms, int64_t now_wall_ms) {
  Member& m = members_[record.node_id];
  if (!m.routing_id.empty()) by_routing_.erase(m.routing_id);
  // Another node registered from this routing id before (a reused DEALER
  // identity): it loses the binding, not its membership.
  const auto previous = by_routing_.find(routing_id);
  if (previous != by_routing_.end() && previous->second != record.node_id) {
    Member& other = members_[previous->second];
    other.routing_id.clear();
    other.state = NodeState::kDown;
    other.down_since_wall_ms = now_wall_ms;
  }
  m.record = record;
  m.routing_id = routing_id;
  by_routing_[routing_id] = record.node_id;
  m.state = NodeState::kUp;
  m.last_seen_ms = now_ms;
  m.up_since_wall_ms = now_wall_ms;
  m.heartbeat_version = record.placement_version;
  m.resident = std::move(resident);
  ++generation_;
  return m;
}

Member* Membership::find(const std::string& node_id) {
  const auto it = members_.find(node_id);
  return it == members_.end() ? nullptr : &it->second;
}

const Member* Membership::find(const std::string& node_id) const {
  const auto it = members_.find(node_id);
  return it == members_.end() ? nullptr : &it->second;
}

Member* Membership::by_routing(const std::string& routing_id) {
  const auto it = by_routing_.find(routing_id);
  if (it == by_routing_.end()) return nullptr;
  Member* m = find(it->second);
  return m != nullptr && m->state == NodeState::kUp ? m : nullptr;
}

std::vector<std::string> Membership::expire(int64_t now_ms, int64_t timeout_ms,
                                            int64_t now_wall_ms) {
  std::vector<std::string> gone;
  for (auto& [id, m] : members_) {
    if (m.state == NodeState::kDown) continue;
    if (now_ms - m.last_seen_ms > timeout_ms) {
      m.state = NodeState::kDown;
      m.down_since_wall_ms = now_wall_ms;
      if (!m.routing_id.empty()) by_routing_.erase(m.routing_id);
      m.routing_id.clear();
      gone.push_back(id);
    }
  }
  if (!gone.empty()) ++generation_;
  return gone;
}

bool Membership::mark_down(const std::string& node_id, int64_t now_wall_ms) {
  Member* m = find(node_id);
  if (m == nullptr || m->state == NodeState::kDown) return false;
  m->state = NodeState::kDown;
  m->down_since_wall_ms = now_wall_ms;
  if (!m->routing_id.empty()) by_routing_.erase(m->routing_id);
  m->routing_id.clear();
  ++generation_;
  return true;
}

bool Membership::forget(const std::string& node_id) {
  const auto it = members_.find(node_id);
  if (it == members_.end() || it->second.state == NodeState::kUp) return false;
  if (!it->second.routing_id.empty()) by_routing_.erase(it->second.routing_id);
  members_.erase(it);
  ++generation_;
  return true;
}

int64_t Membership::next_expiry_ms(int64_t timeout_ms) const {
  int64_t next = std::numeric_limits<int64_t>::max();
  for (const auto& [id, m] : members_) {
    if (m.state != NodeState::kDown) next = std::min(next, m.last_seen_ms + timeout_ms + 1);
  }
  return next;
}

std::vector<const Member*> Membership::up() const {
  std::vector<const Member*> out;
  for (const auto& [id, m] : members_) {
    if (m.state == NodeState::kUp) out.push_back(&m);
  }
  return out;
}

}  // namespace dancemoe::scheduler
