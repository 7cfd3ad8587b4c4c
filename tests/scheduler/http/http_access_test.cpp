// HttpAccess on requests as cpp-httplib hands them to handlers: the peer's
// address, the Host header and the bearer token decide.
#include "scheduler/http/http_access.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include "common/net/key_token.h"

namespace dancemoe::scheduler {
namespace {

httplib::Request request(const std::string& remote, const std::string& host,
                         const std::string& token = "") {
  httplib::Request req;
  req.remote_addr = remote;
  req.headers.emplace("Host", host);
  if (!token.empty()) req.headers.emplace("Authorization", "Bearer " + token);
  return req;
}

struct Cluster {
  net::CurveKeyPair scheduler = *net::generate_key_pair();
  net::CurveKeyPair alice = *net::generate_key_pair();  // operator
  net::CurveKeyPair ws1 = *net::generate_key_pair();    // node
  std::shared_ptr<net::KeyAllowlist> members = std::make_shared<net::KeyAllowlist>();
  HttpAccess access{std::nullopt, ""};

  Cluster() {
    members->replace({alice.public_key, ws1.public_key});
    access = HttpAccess(HttpKeys{scheduler, members, {{"alice", alice.public_key}}}, "");
  }
  std::string token(const net::CurveKeyPair& who) const {
    return *net::make_key_token(who, scheduler.public_key);
  }
};

}  // namespace

TEST_CASE("http access: off loopback, reading needs a member's key and acting an operator's") {
  Cluster c;
  const std::string lan = "192.168.1.20";
  const AccessDecision anonymous = c.access.authorize(request(lan, "sched:8090"), HttpRight::kRead);
  CHECK_FALSE(anonymous.allowed);
  CHECK(anonymous.http_status == 401);
  CHECK(anonymous.reason.find("dancemoe keys http-token") != std::string::npos);
  // Even when the request claims a loopback Host.
  CHECK_FALSE(c.access.authorize(request(lan, "127.0.0.1:8090"), HttpRight::kRead).allowed);

  const AccessDecision node =
      c.access.authorize(request(lan, "sched", c.token(c.ws1)), HttpRight::kRead);
  CHECK(node.allowed);
  CHECK(node.who.find("node key") == 0);
  const AccessDecision node_acts =
      c.access.authorize(request(lan, "sched", c.token(c.ws1)), HttpRight::kOperate);
  CHECK_FALSE(node_acts.allowed);
  CHECK(node_acts.http_status == 403);

  const AccessDecision op =
      c.access.authorize(request(lan, "sched", c.token(c.alice)), HttpRight::kOperate);
  CHECK(op.allowed);
  CHECK(op.who == "operator 'alice'");
}

TEST_CASE("http access: a local reader needs no key, but acting always does") {
  Cluster c;
  for (const char* remote : {"127.0.0.1", "::1", "::ffff:127.0.0.1"}) {
    const AccessDecision local =
        c.access.authorize(request(remote, "localhost:8090"), HttpRight::kRead);
    CHECK(local.allowed);
    CHECK(local.who == "local reader");
    CHECK_FALSE(c.access.authorize(request(remote, "localhost:8090"), HttpRight::kOperate).allowed);
  }
  const AccessDecision rebound =
      c.access.authorize(request("127.0.0.1", "evil.example"), HttpRight::kRead);
  CHECK_FALSE(rebound.allowed);
  CHECK(rebound.http_status == 403);
  // A token that does not verify is refused, even from loopback.
  const std::string forged =
      std::string("dmk1-") + std::string(64, 'a') + "-" + std::string(64, 'b');
  CHECK(
      c.access.authorize(request("127.0.0.1", "localhost", forged), HttpRight::kRead).http_status ==
      401);
}

TEST_CASE("http access: revoking a key in the allowlist takes effect on the next request") {
  Cluster c;
  const auto req = request("10.0.0.5", "sched", c.token(c.ws1));
  CHECK(c.access.authorize(req, HttpRight::kRead).allowed);
  c.members->replace({c.alice.public_key});
  const AccessDecision revoked = c.access.authorize(req, HttpRight::kRead);
  CHECK_FALSE(revoked.allowed);
  CHECK(revoked.reason.find("not a member") != std::string::npos);
  CHECK(
      c.access.authorize(request("10.0.0.5", "sched", c.token(c.alice)), HttpRight::kRead).allowed);
}

TEST_CASE("http access: --insecure serves local readers, and its shared token everything") {
  const HttpAccess none(std::nullopt, "");
  CHECK_FALSE(none.authenticates());
  CHECK(none.authorize(request("127.0.0.1", "localhost"), HttpRight::kRead).allowed);
  CHECK_FALSE(none.authorize(request("127.0.0.1", "localhost"), HttpRight::kOperate).allowed);
  CHECK_FALSE(none.authorize(request("10.0.0.5", "sched"), HttpRight::kRead).allowed);

  const HttpAccess shared(std::nullopt, "s3cret");
  CHECK(shared.authenticates());
  CHECK(shared.authorize(request("10.0.0.5", "sched", "s3cret"), HttpRight::kOperate).allowed);
  CHECK_FALSE(shared.authorize(request("10.0.0.5", "sched", "s3cre"), HttpRight::kRead).allowed);
  CHECK_FALSE(shared.authorize(request("10.0.0.5", "sched"), HttpRight::kRead).allowed);
}

}  // namespace dancemoe::scheduler
