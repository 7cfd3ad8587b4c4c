// Membership with explicit times: expiry, re-attachment after a restart,
// routing-id bindings.
#include "scheduler/daemon/membership.h"

#include <doctest/doctest.h>

namespace dancemoe::scheduler {
namespace {

store::NodeRecord node(const std::string& id) {
  store::NodeRecord r;
  r.node_id = id;
  return r;
}

}  // namespace

TEST_CASE("membership: silence longer than the timeout marks a node down, once") {
  Membership m;
  m.attach(node("a"), {}, "ra", 1000, 0);
  m.attach(node("b"), {}, "rb", 1000, 0);
  CHECK(m.next_expiry_ms(3000) == 4001);
  m.touch(*m.find("a"), 3500);
  CHECK(m.expire(4000, 3000, 0).empty());
  CHECK(m.expire(4001, 3000, 0) == std::vector<std::string>{"b"});
  CHECK(m.expire(9000, 3000, 0) == std::vector<std::string>{"a"});
  CHECK(m.expire(20000, 3000, 0).empty());
  CHECK(m.by_routing("ra") == nullptr);
  CHECK(m.up().empty());
}

TEST_CASE("membership: nodes loaded after a restart get one timeout to re-attach") {
  Membership m;
  m.load({node("a"), node("b")}, 5000);
  CHECK(m.find("a")->state == NodeState::kUnknown);
  CHECK(m.by_routing("anything") == nullptr);
  m.attach(node("a"), {}, "ra2", 6000, 0);
  CHECK(m.find("a")->state == NodeState::kUp);
  CHECK(m.expire(8001, 3000, 0) == std::vector<std::string>{"b"});
  CHECK(m.find("a")->state == NodeState::kUp);
}

TEST_CASE("membership: a routing id belongs to the node that registered last on it") {
  Membership m;
  m.attach(node("a"), {}, "r1", 0, 0);
  const uint64_t generation = m.generation();
  m.attach(node("b"), {}, "r1", 10, 0);  // reused DEALER identity
  CHECK(m.generation() > generation);
  CHECK(m.by_routing("r1")->id() == "b");
  CHECK(m.find("a")->state == NodeState::kDown);
  m.attach(node("b"), {}, "r2", 20, 0);  // b reconnected with a new identity
  CHECK(m.by_routing("r1") == nullptr);
  CHECK(m.by_routing("r2")->id() == "b");
}

}  // namespace dancemoe::scheduler
