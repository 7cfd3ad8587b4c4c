// The scheduler service with keys (docs/security.md): who may do what,
// node ids bound to keys, the members sent to nodes, and nodes admit /
// revoke / forget -- driven directly with a FakeClock (service_harness.h).
#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include "tests/scheduler/daemon/service_harness.h"

namespace dancemoe::scheduler::test {
namespace {

proto::Register registration(Harness& h, const std::string& node) {
  return h.registration(node, 16000);
}

const proto::RegisterReply* reply_of(const std::vector<Outgoing>& out) {
  return find_body<proto::RegisterReply>(out);
}

// Registers node `node` with its own key (named like it).
void join(Harness& h, const std::string& node) {
  auto out = h.send_as(node, node, registration(h, node));
  REQUIRE(reply_of(out) != nullptr);
  REQUIRE(reply_of(out)->accepted);
}

}  // namespace

TEST_CASE("service keys: a key that is not admitted gets no answer and changes nothing") {
  Harness h;
  h.secure({"a", "b"});
  join(h, "a");
  const auto before = h.service().membership().all().size();
  // A stranger registering a fake node, re-registering a, asking for a
  // round, for status: nothing comes back, nothing changes.
  CHECK(h.send_as("stranger", "fake", registration(h, "fake")).empty());
  CHECK(h.send_as("stranger", "a", registration(h, "a")).empty());
  CHECK(h.deliver_as("stranger", "cli", h.envelope("cli", proto::StatusRequest{"round", "{}"}))
            .empty());
  CHECK(h.deliver_as("stranger", "cli", h.envelope("cli", proto::StatusRequest{"status", "{}"}))
            .empty());
  // An undecodable message from a stranger is not answered either.
  const net::ReceivedMessage garbage{
      std::string("x"), invalid_argument("not an envelope"), 0, {}, h.key_of.at("stranger")};
  h.service().handle(garbage);
  CHECK(h.service().take_outbox().empty());
  CHECK(h.service().membership().all().size() == before);
  CHECK(h.service().membership().find("fake") == nullptr);
  CHECK(h.service().counters().rejected_for(Rejection::kUnknownKey) == 5);
}

TEST_CASE("service keys: a node id is bound to the key that first registered it") {
  Harness h;
  h.secure({"a", "b"});
  join(h, "a");
  // Key b may not take node id a (another member's key re-pointing a)...
  auto out = h.send_as("b", "a", registration(h, "a"));
  REQUIRE(reply_of(out) != nullptr);
  CHECK_FALSE(reply_of(out)->accepted);
  CHECK(reply_of(out)->reason.find("node id 'a' is bound to key 'a'") != std::string::npos);
  CHECK(reply_of(out)->reason.find("dancemoe nodes forget a") != std::string::npos);
  // ...and key a may not register a second node (fake nodes from a member).
  out = h.send_as("a", "fake", registration(h, "fake"));
  REQUIRE(reply_of(out) != nullptr);
  CHECK_FALSE(reply_of(out)->accepted);
  CHECK(reply_of(out)->reason.find("key 'a' already registered node 'a'") != std::string::npos);
  // An operator key registers nothing.
  out = h.send_as("op", "c", registration(h, "c"));
  REQUIRE(reply_of(out) != nullptr);
  CHECK(reply_of(out)->reason.find("is an operator key") != std::string::npos);
  CHECK(h.service().counters().rejected_for(Rejection::kKeyBinding) == 2);
  // a's record is untouched; a re-registers with its own key at will.
  CHECK(h.service().membership().find("a")->record.expert_endpoint == "tcp://a:5551");
  join(h, "a");
  // The binding survives a restart (SQLite).
  h.restart();
  out = h.send_as("b", "a", registration(h, "a"));
  REQUIRE(reply_of(out) != nullptr);
  CHECK_FALSE(reply_of(out)->accepted);
  join(h, "b");
}

TEST_CASE("service keys: node messages need the node's own key on its connection") {
  Harness h;
  h.secure({"a", "b"});
  join(h, "a");
  join(h, "b");
  // b's key on a's connection, claiming to be a: refused, a's state unchanged.
  auto out = h.deliver_as("b", "r-a", h.envelope("a", proto::Heartbeat{7, 0}));
  REQUIRE(find_body<proto::Error>(out) != nullptr);
  CHECK(h.service().membership().find("a")->heartbeat_version == 0);
  // The operator key cannot speak the node protocol.
  out = h.deliver_as("op", "r-a", h.envelope("a", proto::Heartbeat{7, 0}));
  REQUIRE(find_body<proto::Error>(out) != nullptr);
  CHECK(find_body<proto::Error>(out)->message.find("operator key") != std::string::npos);
  out = h.send_as("a", "a", proto::Heartbeat{7, 0});
  CHECK(find_body<proto::Ack>(out) != nullptr);
  CHECK(h.service().membership().find("a")->heartbeat_version == 7);
}

TEST_CASE("service keys: changes need an operator key -- members and operators read status") {
  Harness h;
  h.secure({"a"});
  join(h, "a");
  for (const char* what : {"round", "apply", "admit", "revoke", "forget"}) {
    CAPTURE(what);
    auto r = h.query_as("a", what);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().message().find("needs an operator key; key 'a' is a node key") !=
          std::string::npos);
  }
  CHECK(h.service().counters().rejected_for(Rejection::kNotPermitted) == 5);
  auto status = h.query_as("a", "status");
  REQUIRE(status.is_ok());
  CHECK((*status)["security"]["curve"] == true);
  CHECK((*status)["security"]["node_keys"] == 1);
  REQUIRE(h.query_as("op", "nodes").is_ok());
  CHECK((*h.query_as("op", "nodes"))["nodes"][0]["key"] == "a");
  auto round = h.query_as("op", "round");
  INFO((round.is_ok() ? round->dump() : round.status().to_string()));
  CHECK(round.is_ok());
}

TEST_CASE("service keys: members go to nodes after Register, on change, and to stale heartbeats") {
  Harness h;
  h.secure({"a", "b"});
  auto out = h.send_as("a", "a", registration(h, "a"));
  const auto* members = find_body<proto::Members>(out, "r-a");
  REQUIRE(members != nullptr);
  REQUIRE(members->members.size() == 2);
  CHECK(members->members[0].key_name == "a");
  CHECK(members->members[0].node_id == "a");
  CHECK(members->members[1].node_id.empty());  // b has not registered
  const uint64_t v1 = members->version;
  // b registers: a learns b's node id at once.
  out = h.send_as("b", "b", registration(h, "b"));
  members = find_body<proto::Members>(out, "r-a");
  REQUIRE(members != nullptr);
  CHECK(members->members[1].node_id == "b");
  const uint64_t v2 = members->version;
  CHECK(v2 != v1);
  // A heartbeat naming the current version gets no Members; a stale one does.
  out = h.send_as("a", "a", proto::Heartbeat{0, 0, v2});
  CHECK(find_body<proto::Members>(out) == nullptr);
  out = h.send_as("a", "a", proto::Heartbeat{0, 0, v1});
  REQUIRE(find_body<proto::Members>(out) != nullptr);
  CHECK(find_body<proto::Members>(out)->version == v2);
  // Every PlacementPrepare comes with the members.
  out = h.advance(2500);  // cold start
  REQUIRE(find_body<proto::PlacementPrepare>(out, "r-a") != nullptr);
  CHECK(find_body<proto::Members>(out, "r-a") != nullptr);
  // The same set after a restart has the same version: nothing is resent.
  h.restart();
  CHECK(h.service().members().version == v2);
}

TEST_CASE("service keys: revoke drops the node at once and its messages -- forget frees the id") {
  Harness h;
  h.secure({"a", "b"});
  join(h, "a");
  join(h, "b");
  auto revoked = h.query_as("op", "revoke", {{"name", "b"}});
  INFO((revoked.is_ok() ? revoked->dump() : revoked.status().to_string()));
  REQUIRE(revoked.is_ok());
  CHECK((*revoked)["node_id"] == "b");
  CHECK(h.service().membership().find("b")->state == NodeState::kDown);
  CHECK(h.service().members().members.size() == 1);
  // The key file is gone: a restarted scheduler does not admit b either.
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(h.path()).parent_path() / "keys" /
                                      "nodes" / "b.pub"));
  // b's open connection: no answer, nothing changes.
  CHECK(h.send_as("b", "b", proto::Heartbeat{9, 0}).empty());
  CHECK(h.send_as("b", "b", registration(h, "b")).empty());
  CHECK(h.service().membership().find("b")->state == NodeState::kDown);
  // An up node cannot be forgotten; a down one can, and its id is free.
  auto up = h.query_as("op", "forget", {{"node_id", "a"}});
  CHECK(up.status().message().find("node 'a' is up") != std::string::npos);
  REQUIRE(h.query_as("op", "forget", {{"node_id", "b"}}).is_ok());
  CHECK(h.service().membership().find("b") == nullptr);
  CHECK(h.query_as("op", "forget", {{"node_id", "b"}}).status().code() == StatusCode::kNotFound);
  // Re-admitted under a new name, the same machine registers id b again.
  REQUIRE(h.query_as("op", "admit", {{"name", "b2"}, {"public_key", h.key_of.at("b")}}).is_ok());
  h.key_of["b2"] = h.key_of.at("b");
  join(h, "b");  // key b2 (the same key) may take the forgotten id
  CHECK(h.service().membership().find("b")->state == NodeState::kUp);
  CHECK(h.query_as("op", "admit", {{"name", "b3"}, {"public_key", h.key_of.at("b")}})
            .status()
            .message()
            .find("already admitted as 'b2'") != std::string::npos);
  CHECK(h.query_as("op", "admit", {{"name", "x"}, {"public_key", "short"}})
            .status()
            .message()
            .find("40 Z85 characters") != std::string::npos);
}

TEST_CASE("service keys: --insecure is warned about at start and then once a minute") {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  spdlog::set_level(spdlog::level::warn);
  auto warnings = [&] {
    int n = 0;
    for (const std::string& line : sink->last_formatted()) {
      n += line.find("INSECURE: --insecure is set") != std::string::npos;
    }
    return n;
  };
  {
    Harness h;  // insecure
    h.advance(1);
    CHECK(warnings() == 1);
    h.advance(30'000);
    CHECK(warnings() == 1);
    h.advance(30'000);
    CHECK(warnings() == 2);
    h.secure({"a"});
    h.advance(120'000);
    CHECK(warnings() == 2);  // with keys: never
  }
  spdlog::set_default_logger(previous);
}

}  // namespace dancemoe::scheduler::test
