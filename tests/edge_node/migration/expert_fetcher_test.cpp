#include "edge_node/migration/expert_fetcher.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "common/base/sha256.h"
#include "common/net/zmq_transport.h"
#include "edge_node/expert_service/expert_blob_cache.h"
#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {
namespace {

using namespace std::chrono_literals;

// A peer on a real ROUTER socket serving one expert's bytes chunk by chunk,
// with faults: it stops answering (dies) after `answer_chunks` chunks,
// flips a byte of what it sends, or announces another SHA-256.
struct ScriptedPeer {
  enum class Fault { kNone, kDieAfter, kFlipByte, kOtherSha };
  ScriptedPeer(zmq::context_t& context, std::string id, std::vector<uint8_t> bytes, Fault fault,
               int answer_chunks = 0)
      : node_id(std::move(id)), bytes_(std::move(bytes)), fault_(fault), answer_(answer_chunks) {
    auto socket = net::make_socket(context, zmq::socket_type::router);
    REQUIRE(socket.is_ok());
    router_ = std::move(*socket);
    REQUIRE(net::bind(router_, "tcp://127.0.0.1:*").is_ok());
    endpoint = net::last_endpoint(router_);
    Sha256 hash;
    hash.update(bytes_);
    sha_ = hash.finish();
    if (fault_ == Fault::kOtherSha) sha_[0] ^= 1;
    thread_ = std::thread([this] { run(); });
  }
  ~ScriptedPeer() {
    stop_.store(true);
    thread_.join();
  }
  PeerInfo info() const { return {node_id, endpoint}; }

  std::string node_id;
  std::string endpoint;
  std::atomic<int> served{0};
  std::atomic<uint64_t> first_offset{UINT64_MAX};

 private:
  void run() {
    while (!stop_.load()) {
      auto m = net::receive_message(router_, 20ms, true);
      if (!m || !m->envelope.is_ok()) continue;
      const auto* req = std::get_if<proto::ExpertWeightsRequest>(&m->envelope->body);
      if (req == nullptr) continue;
      if (first_offset.load() == UINT64_MAX) first_offset.store(req->offset);
      if (fault_ == Fault::kDieAfter && served.load() >= answer_) continue;  // silent: dead
      const uint64_t end = std::min<uint64_t>(bytes_.size(), req->offset + req->max_bytes);
      std::vector<uint8_t> chunk(bytes_.begin() + static_cast<long>(req->offset),
                                 bytes_.begin() + static_cast<long>(end));
      if (fault_ == Fault::kFlipByte && req->offset == 0) chunk[3] ^= 0x10;
      proto::Envelope e;
      e.body = proto::ExpertWeightsChunk{req->layer,    req->expert,
                                         req->offset,   static_cast<uint32_t>(chunk.size()),
                                         bytes_.size(), sha_};
      (void)net::send_message(router_, e, chunk, m->routing_id);
      ++served;
    }
  }
  std::vector<uint8_t> bytes_;
  Fault fault_;
  int answer_;
  Digest sha_{};
  zmq::socket_t router_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct FetcherFixture {
  FetcherFixture() {
    ExpertStore store(*model.checkpoint);
    REQUIRE(store.load(key).is_ok());
    ExpertBlobCache blobs(store);
    auto blob = blobs.get(key);
    REQUIRE(blob.is_ok());
    bytes = (*blob)->bytes;
    digest = (*blob)->sha256;
    FetcherOptions options;
    options.node_id = "me";
    options.chunk_bytes = 1000;
    options.chunk_timeout = 300ms;
    fetcher = std::make_unique<ExpertFetcher>(context, options);
  }
  test_support::TinyModel model;
  ExpertRef key{0, 5};
  zmq::context_t context;
  std::vector<uint8_t> bytes;
  Digest digest{};
  std::unique_ptr<ExpertFetcher> fetcher;
};

TEST_CASE("fetcher: a peer that dies mid-fetch is resumed on the next from where it stopped") {
  FetcherFixture f;
  REQUIRE(f.bytes.size() > 5000);
  ScriptedPeer dying(f.context, "dying", f.bytes, ScriptedPeer::Fault::kDieAfter, 3);
  ScriptedPeer healthy(f.context, "healthy", f.bytes, ScriptedPeer::Fault::kNone);
  FetchStats stats;
  Result<std::vector<uint8_t>> got =
      f.fetcher->fetch(f.key, f.bytes.size(), {dying.info(), healthy.info()}, &f.digest, &stats);
  REQUIRE_MESSAGE(got.is_ok(), got.status().to_string());
  CHECK(*got == f.bytes);
  CHECK(stats.source == "healthy");
  CHECK(stats.sources_tried == 2);
  CHECK(stats.bytes_resumed == 3000);
  CHECK(healthy.first_offset.load() == 3000);  // not from the start
}

TEST_CASE("fetcher: a checksum mismatch is refused and the expert fetched again elsewhere") {
  FetcherFixture f;
  SUBCASE("bytes that do not hash to the announced digest") {
    ScriptedPeer corrupt(f.context, "corrupt", f.bytes, ScriptedPeer::Fault::kFlipByte);
    ScriptedPeer healthy(f.context, "healthy", f.bytes, ScriptedPeer::Fault::kNone);
    FetchStats stats;
    auto got = f.fetcher->fetch(f.key, f.bytes.size(), {corrupt.info(), healthy.info()}, &f.digest,
                                &stats);
    REQUIRE(got.is_ok());
    CHECK(*got == f.bytes);
    CHECK(stats.source == "healthy");
    CHECK(healthy.first_offset.load() == 0);  // whole again: which chunk was bad is unknown
    CHECK(stats.bytes_received == 2 * f.bytes.size());
  }
  SUBCASE("a peer announcing another digest is left at its first chunk") {
    ScriptedPeer other(f.context, "other", f.bytes, ScriptedPeer::Fault::kOtherSha);
    ScriptedPeer healthy(f.context, "healthy", f.bytes, ScriptedPeer::Fault::kNone);
    FetchStats stats;
    auto got =
        f.fetcher->fetch(f.key, f.bytes.size(), {other.info(), healthy.info()}, &f.digest, &stats);
    REQUIRE(got.is_ok());
    CHECK(other.served.load() == 1);
    CHECK(stats.bytes_received == f.bytes.size());
  }
  SUBCASE("no peer has the right bytes: unavailable naming each") {
    ScriptedPeer corrupt(f.context, "corrupt", f.bytes, ScriptedPeer::Fault::kFlipByte);
    ScriptedPeer dead(f.context, "dead", f.bytes, ScriptedPeer::Fault::kDieAfter, 0);
    auto got = f.fetcher->fetch(f.key, f.bytes.size(), {corrupt.info(), dead.info()}, &f.digest);
    REQUIRE_FALSE(got.is_ok());
    CHECK(got.status().code() == StatusCode::kUnavailable);
    CHECK(got.status().message().find("corrupt: SHA-256") != std::string::npos);
    CHECK(got.status().message().find("dead: no chunk within") != std::string::npos);
  }
}

TEST_CASE("fetcher: without a known digest, a resumed fetch needs the same announced digest") {
  FetcherFixture f;
  ScriptedPeer dying(f.context, "dying", f.bytes, ScriptedPeer::Fault::kDieAfter, 2);
  ScriptedPeer healthy(f.context, "healthy", f.bytes, ScriptedPeer::Fault::kNone);
  FetchStats stats;
  auto got =
      f.fetcher->fetch(f.key, f.bytes.size(), {dying.info(), healthy.info()}, nullptr, &stats);
  REQUIRE(got.is_ok());
  CHECK(*got == f.bytes);
  CHECK(stats.bytes_resumed == 2000);
  // The same fetcher reuses its socket to a peer for the next expert.
  auto again = f.fetcher->fetch(f.key, f.bytes.size(), {healthy.info()}, &f.digest);
  REQUIRE(again.is_ok());
}

}  // namespace
}  // namespace dancemoe::node
