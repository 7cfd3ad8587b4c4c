#include "edge_node/remote/peer_pool.h"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "common/net/curve_keys.h"

namespace dancemoe::node {
namespace {

// Routes spdlog's default logger into a string for the test's lifetime.
class LogCapture {
 public:
  LogCapture()
      : previous_(spdlog::default_logger()),
        logger_(std::make_shared<spdlog::logger>(
            "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_))) {
    spdlog::set_default_logger(logger_);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::logger> logger_;
};

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("peer pool: a peer without a known key gets no link, and one warning until it has one") {
  Result<net::CurveKeyPair> own = net::generate_key_pair();
  Result<net::CurveKeyPair> peer_b = net::generate_key_pair();
  REQUIRE(own.is_ok());
  REQUIRE(peer_b.is_ok());
  auto members = std::make_shared<MemberKeys>(*own);
  members->replace(proto::Members{1, {{"a", "a", own->public_key}}});
  zmq::context_t context;
  PeerPool pool(context,
                PeerPoolOptions{std::chrono::milliseconds(200), int64_t{1} << 20, members});
  const PeerInfo b{"b", "tcp://127.0.0.1:1"};

  LogCapture log;
  for (int i = 0; i < 3; ++i) {
    Result<PeerLink*> link = pool.link(b);
    REQUIRE_FALSE(link.is_ok());
    CHECK(link.status().message().find("'b'") != std::string::npos);
  }
  CHECK(occurrences(log.text(), "has no key for it") == 1);  // once, not per layer or call
  CHECK(log.text().find("[warning]") != std::string::npos);
  CHECK(log.text().find("add b.pub to --peer-keys") != std::string::npos);

  // Its key arrives: the link is made (connecting is lazy in ZeroMQ).
  members->replace(
      proto::Members{2, {{"a", "a", own->public_key}, {"b", "b", peer_b->public_key}}});
  Result<PeerLink*> link = pool.link(b);
  REQUIRE(link.is_ok());
  CHECK((*link)->server_key() == peer_b->public_key);

  // Revoked again: warned again, once.
  members->replace(proto::Members{3, {{"a", "a", own->public_key}}});
  CHECK_FALSE(pool.link(b).is_ok());
  CHECK_FALSE(pool.link(b).is_ok());
  CHECK(occurrences(log.text(), "has no key for it") == 2);
}

}  // namespace dancemoe::node
