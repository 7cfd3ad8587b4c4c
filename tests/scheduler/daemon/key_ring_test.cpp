#include "scheduler/daemon/key_ring.h"

#include <doctest/doctest.h>

#include "common/net/curve_keys.h"
#include "tests/support/paths.h"

namespace dancemoe::scheduler {
namespace {

struct Dirs {
  testing::TempDir dir{"key-ring"};
  std::filesystem::path nodes = dir.path() / "nodes";
  std::filesystem::path operators = dir.path() / "operators";
  Dirs() {
    std::filesystem::create_directories(nodes);
    std::filesystem::create_directories(operators);
  }
  net::CurveKeyPair add(const std::filesystem::path& to, const std::string& name) {
    auto pair = net::write_key_pair(dir.path() / "secrets", name);
    REQUIRE(pair.is_ok());
    REQUIRE(net::write_public_key_file(to, name, pair->public_key).is_ok());
    return *pair;
  }
};

}  // namespace

TEST_CASE("key ring: node and operator keys are told apart -- anything else is unknown") {
  Dirs d;
  const auto a = d.add(d.nodes, "ws1");
  const auto op = d.add(d.operators, "alice");
  auto ring = KeyRing::load(d.nodes, d.operators);
  REQUIRE(ring.is_ok());
  CHECK(ring->secure());
  CHECK(ring->who(a.public_key).node);
  CHECK(ring->who(a.public_key).name == "ws1");
  CHECK_FALSE(ring->who(a.public_key).operator_key);
  CHECK(ring->who(op.public_key).operator_key);
  CHECK(ring->who(op.public_key).name == "alice");
  CHECK_FALSE(ring->who(net::generate_key_pair()->public_key).known());
  CHECK_FALSE(ring->who("").known());  // a plain connection
  CHECK(ring->allowlist()->contains(a.public_key));
  CHECK(ring->allowlist()->contains(op.public_key));
  CHECK(ring->allowlist()->size() == 2);
  // Insecure: everyone may do everything.
  CHECK(KeyRing::insecure().who("").operator_key);
  CHECK(KeyRing::insecure().who("").node);
}

TEST_CASE("key ring: admit and revoke change the allowlist and persist as files") {
  Dirs d;
  d.add(d.operators, "alice");
  const auto op = *net::read_public_key_file(d.operators / "alice.pub");
  auto ring = KeyRing::load(d.nodes, d.operators);
  REQUIRE(ring.is_ok());
  const auto fresh = *net::generate_key_pair();
  REQUIRE(ring->admit("ws2", fresh.public_key).is_ok());
  CHECK(std::filesystem::exists(d.nodes / "ws2.pub"));
  CHECK(ring->who(fresh.public_key).node);
  CHECK(ring->allowlist()->contains(fresh.public_key));
  CHECK(ring->admit("ws2", net::generate_key_pair()->public_key).message().find("already") !=
        std::string::npos);
  CHECK(ring->admit("ws3", op).message().find("operator key 'alice'") != std::string::npos);
  CHECK_FALSE(ring->admit("../x", net::generate_key_pair()->public_key).is_ok());  // lint: path-ok
  // A restarted scheduler reads the same keys.
  auto again = KeyRing::load(d.nodes, d.operators);
  REQUIRE(again.is_ok());
  CHECK(again->who(fresh.public_key).name == "ws2");

  auto revoked = ring->revoke("ws2");
  REQUIRE(revoked.is_ok());
  CHECK(*revoked == fresh.public_key);
  CHECK_FALSE(std::filesystem::exists(d.nodes / "ws2.pub"));
  CHECK_FALSE(ring->who(fresh.public_key).known());
  CHECK_FALSE(ring->allowlist()->contains(fresh.public_key));
  CHECK(ring->revoke("ws2").status().code() == StatusCode::kNotFound);
}

TEST_CASE("key ring: no operator key, or one key in both roles, is refused") {
  Dirs d;
  d.add(d.nodes, "ws1");
  CHECK(KeyRing::load(d.nodes, d.operators).status().message().find("no NAME.pub") !=
        std::string::npos);
  const auto shared = *net::read_public_key_file(d.nodes / "ws1.pub");
  REQUIRE(net::write_public_key_file(d.operators, "alice", shared).is_ok());
  CHECK(KeyRing::load(d.nodes, d.operators).status().message().find("also operator key") !=
        std::string::npos);
  CHECK(KeyRing::load(d.dir.path() / "missing", d.operators)
            .status()
            .message()
            .find("--nodes-keys") != std::string::npos);
}

}  // namespace dancemoe::scheduler
