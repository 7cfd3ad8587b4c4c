#include "edge_node/migration/migration_executor.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <thread>

#include "common/base/sha256.h"
#include "common/model/gguf/gguf_quantize.h"
#include "common/net/zmq_transport.h"
#include "edge_node/expert_service/expert_service.h"
#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {
namespace {

using namespace std::chrono_literals;

// Waits for on_done.
struct Done {
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<std::pair<uint64_t, Status>> result;
  MigrationExecutor::DoneCallback callback() {
    return [this](uint64_t v, const Status& s) {
      std::lock_guard<std::mutex> lock(mutex);
      result.emplace(v, s);
      cv.notify_all();
    };
  }
  std::pair<uint64_t, Status> wait() {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(cv.wait_for(lock, 20s, [&] { return result.has_value(); }));
    return *result;
  }
};

struct MigrationFixture {
  explicit MigrationFixture(MigrationOptions options = {})
      : store(*model.checkpoint), table(HolderTable::empty(model.config())), log(model.config()) {
    options.node_id = "a";
    migration = std::make_unique<MigrationExecutor>(*model.checkpoint, store, table, log, context,
                                                    options, [] { return false; });
  }
  test_support::TinyModel model;
  zmq::context_t context;
  ExpertStore store;
  HolderTableHandle table;
  ActivationLog log;
  std::unique_ptr<MigrationExecutor> migration;
};

}  // namespace

TEST_CASE("migration: prepare loads in the background, commit switches the table and evicts") {
  MigrationFixture f;
  const std::vector<int32_t> layers = f.model.moe_layers();
  REQUIRE(f.migration->apply_now(test_support::make_placement(1, {{"a", "", {0, 1, 2}}}, layers))
              .is_ok());
  CHECK(f.table.get()->version() == 1);
  CHECK(f.store.n_resident() == static_cast<int64_t>(3 * layers.size()));

  Done done;
  const ClusterPlacement v2 =
      test_support::make_placement(2, {{"a", "", {2, 3}}, {"b", "tcp://b:1", {0, 1}}}, layers);
  REQUIRE(f.migration->prepare(v2, done.callback()).is_ok());
  auto [version, status] = done.wait();
  CHECK(version == 2);
  CHECK(status.is_ok());
  // Ready, not committed: old table in force, old and new experts resident.
  CHECK(f.table.get()->version() == 1);
  CHECK(f.store.n_resident() == static_cast<int64_t>(4 * layers.size()));
  CHECK(f.migration->status().state == "ready");

  REQUIRE(f.migration->commit(2).is_ok());
  CHECK(f.table.get()->version() == 2);
  CHECK(f.table.get()->is_local(layers[0], 3));
  CHECK_FALSE(f.table.get()->is_local(layers[0], 0));
  CHECK(f.store.n_resident() == static_cast<int64_t>(2 * layers.size()));
  CHECK_FALSE(f.store.is_resident({layers[0], 0}));
  CHECK(f.log.snapshot().placement_version == 2);
  CHECK(f.migration->commit(2).is_ok());  // a resent Commit is harmless
  CHECK(f.migration->status().experts_evicted == 2 * layers.size());
}

TEST_CASE("migration: abort discards what was loaded -- commits out of order are refused") {
  MigrationFixture f;
  const std::vector<int32_t> layers = f.model.moe_layers();
  REQUIRE(
      f.migration->apply_now(test_support::make_placement(1, {{"a", "", {0}}}, layers)).is_ok());
  CHECK(f.migration->commit(5).code() == StatusCode::kFailedPrecondition);
  Done done;
  REQUIRE(f.migration
              ->prepare(test_support::make_placement(2, {{"a", "", {0, 5, 6}}}, layers),
                        done.callback())
              .is_ok());
  CHECK(done.wait().second.is_ok());
  CHECK(f.migration->commit(3).code() == StatusCode::kFailedPrecondition);
  REQUIRE(f.migration->abort(2, "another node failed").is_ok());
  CHECK(f.store.n_resident() == static_cast<int64_t>(layers.size()));
  CHECK(f.table.get()->version() == 1);
  CHECK(f.migration->commit(2).code() == StatusCode::kFailedPrecondition);
  CHECK(f.migration->status().last_error.find("another node failed") != std::string::npos);
  // An older version than the committed one is refused at prepare.
  CHECK(
      f.migration->prepare(test_support::make_placement(0, {{"a", "", {1}}}, layers), {}).code() ==
      StatusCode::kFailedPrecondition);
}

TEST_CASE("migration: a placement over the memory limit is refused with the numbers") {
  test_support::TinyModel probe;
  MigrationOptions options;
  options.memory_limit_bytes = 2 * probe.checkpoint->expert_bytes(0, 0);
  MigrationFixture f(options);
  Status s = f.migration->prepare(
      test_support::make_placement(1, {{"a", "", {0, 1, 2}}}, f.model.moe_layers()), {});
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message().find("over the limit") != std::string::npos);
}

TEST_CASE("migration: experts fetched from a peer in checked chunks equal the local files") {
  MigrationOptions options;
  options.source = ExpertSource::kPeer;
  options.chunk_bytes = 3000;  // several chunks per expert
  MigrationFixture f(options);
  const std::vector<int32_t> layers = f.model.moe_layers();
  ExpertStore peer_store(*f.model.checkpoint);
  for (int32_t l : layers) {
    for (int32_t e : {4, 5}) REQUIRE(peer_store.load({l, e}).is_ok());
  }
  ExpertServiceOptions service_options;
  service_options.bind_endpoint = "tcp://127.0.0.1:*";
  service_options.limits.max_chunk_bytes = 3000;
  auto service = ExpertService::start(f.context, f.model.config(), peer_store, service_options);
  REQUIRE(service.is_ok());
  const std::string endpoint = (*service)->bound_endpoint();
  REQUIRE(f.migration->apply_now(test_support::make_placement(1, {{"b", endpoint, {4, 5}}}, layers))
              .is_ok());

  Done done;
  REQUIRE(f.migration
              ->prepare(test_support::make_placement(2, {{"a", "", {4}}, {"b", endpoint, {4, 5}}},
                                                     layers),
                        done.callback())
              .is_ok());
  REQUIRE(done.wait().second.is_ok());
  REQUIRE(f.migration->commit(2).is_ok());
  CHECK(f.migration->status().experts_fetched == layers.size());
  CHECK(f.migration->status().experts_loaded == 0);
  ExpertStore from_disk(*f.model.checkpoint);
  REQUIRE(from_disk.load({layers[1], 4}).is_ok());
  auto fetched = f.store.get({layers[1], 4});
  auto local = from_disk.get({layers[1], 4});
  REQUIRE(fetched != nullptr);
  for (auto [a, b] :
       {std::pair{fetched->gate, local->gate}, std::pair{fetched->down, local->down}}) {
    CHECK(std::memcmp(a.data, b.data, static_cast<size_t>(a.rows * a.cols * 2)) == 0);
  }
  CHECK((*service)->counters().chunks.load() > 2 * layers.size());
}

TEST_CASE("migration: a GGUF node fetches experts from a peer as the file's quantized blocks") {
  test_support::TinyModel model;
  const std::filesystem::path file = model.dir.path() / "tiny-q8_0.gguf";
  gguf::QuantizeOptions quantize;
  quantize.mixture = gguf::Mixture::kQ8_0;
  REQUIRE(gguf::quantize_to_gguf(*model.checkpoint, file, quantize).is_ok());
  Result<std::unique_ptr<Checkpoint>> opened = Checkpoint::open(file);
  REQUIRE(opened.is_ok());
  const Checkpoint& ckpt = **opened;
  const std::vector<int32_t> layers = model.moe_layers();
  // The peer computes on the file's mapping; the node has no local source.
  ExpertStore peer_store(ckpt);
  for (int32_t l : layers) {
    for (int32_t e : {4, 5}) REQUIRE(peer_store.load({l, e}).is_ok());
  }
  zmq::context_t context;
  ExpertServiceOptions service_options;
  service_options.bind_endpoint = "tcp://127.0.0.1:*";
  service_options.limits.max_chunk_bytes = 3000;
  auto service = ExpertService::start(context, ckpt.config(), peer_store, service_options);
  REQUIRE(service.is_ok());
  const std::string endpoint = (*service)->bound_endpoint();
  ExpertStore store(ckpt);
  HolderTableHandle table(HolderTable::empty(ckpt.config()));
  ActivationLog log(ckpt.config());
  MigrationOptions options;
  options.node_id = "a";
  options.source = ExpertSource::kPeer;
  options.chunk_bytes = 3000;
  MigrationExecutor migration(ckpt, store, table, log, context, options, [] { return false; });
  REQUIRE(migration.apply_now(test_support::make_placement(1, {{"b", endpoint, {4, 5}}}, layers))
              .is_ok());
  Done done;
  REQUIRE(migration
              .prepare(test_support::make_placement(2, {{"a", "", {4}}, {"b", endpoint, {4, 5}}},
                                                    layers),
                       done.callback())
              .is_ok());
  REQUIRE(done.wait().second.is_ok());
  REQUIRE(migration.commit(2).is_ok());
  CHECK(migration.status().experts_fetched == layers.size());
  // What arrived is the file's Q8_0 blocks, byte for byte, in the store's
  // quantized size.
  const ExpertRef key{layers[1], 4};
  auto fetched = store.get(key);
  REQUIRE(fetched != nullptr);
  CHECK(fetched->gate.type == kernels::WeightType::kQ8_0);
  CHECK(fetched->n_bytes == store.expert_bytes(key));
  CHECK(store.expert_bytes(key) < model.checkpoint->expert_bytes(key.layer, key.expert));
  for (TensorRole role : {TensorRole::kExpertGate, TensorRole::kExpertDown}) {
    const TensorLocation& t = ckpt.tensor(role, key.layer, key.expert);
    const kernels::WeightView& got =
        role == TensorRole::kExpertGate ? fetched->gate : fetched->down;
    CHECK(got.data != t.mapped);  // a copy of its own, not the node's mapping
    CHECK(std::memcmp(got.data, t.mapped, t.n_bytes) == 0);
  }
}

TEST_CASE("migration: a peer sending corrupted weights is detected by the SHA-256 and refused") {
  MigrationOptions options;
  options.source = ExpertSource::kPeer;
  options.fetch_timeout = 2s;
  MigrationFixture f(options);
  const std::vector<int32_t> layers = f.model.moe_layers();
  // A protocol peer that serves the right size with one flipped byte.
  auto router = net::make_socket(f.context, zmq::socket_type::router);
  REQUIRE(router.is_ok());
  REQUIRE(net::bind(*router, "tcp://127.0.0.1:*").is_ok());
  const std::string endpoint = net::last_endpoint(*router);
  std::atomic<bool> stop{false};
  const uint64_t total = f.model.checkpoint->expert_bytes(layers[0], 6);
  std::thread peer([&] {
    ExpertStore s(*f.model.checkpoint);
    if (!s.load({layers[0], 6}).is_ok()) return;
    ExpertBlobCache blobs(s);
    auto blob = blobs.get({layers[0], 6});
    while (!stop.load()) {
      auto m = net::receive_message(*router, 50ms, true);
      if (!m || !m->envelope.is_ok()) continue;
      const auto* request = std::get_if<proto::ExpertWeightsRequest>(&m->envelope->body);
      if (request == nullptr) continue;
      const proto::ExpertWeightsRequest& req = *request;
      std::vector<uint8_t> bytes((*blob)->bytes.begin() + static_cast<long>(req.offset),
                                 (*blob)->bytes.begin() + static_cast<long>(std::min<uint64_t>(
                                                              total, req.offset + req.max_bytes)));
      if (req.offset == 0) bytes[10] ^= 0x40;
      proto::Envelope e;
      e.body = proto::ExpertWeightsChunk{req.layer,  req.expert,
                                         req.offset, static_cast<uint32_t>(bytes.size()),
                                         total,      (*blob)->sha256};
      (void)net::send_message(*router, e, bytes, m->routing_id);
    }
  });
  REQUIRE(f.migration->apply_now(test_support::make_placement(1, {{"b", endpoint, {6}}}, layers))
              .is_ok());
  Done done;
  REQUIRE(
      f.migration
          ->prepare(test_support::make_placement(2, {{"a", "", {6}}, {"b", endpoint, {6}}}, layers),
                    done.callback())
          .is_ok());
  const auto [version, status] = done.wait();
  stop.store(true);
  peer.join();
  CHECK(version == 2);
  REQUIRE_FALSE(status.is_ok());
  CHECK(status.message().find("SHA-256") != std::string::npos);
  CHECK(f.migration->status().state == "failed");
  CHECK(f.migration->commit(2).code() == StatusCode::kFailedPrecondition);
  CHECK_FALSE(f.store.is_resident({layers[0], 6}));
}

TEST_CASE("migration: weights a peer vouches for but the manifest does not are refused") {
  // The peer's bytes and its SHA-256 agree -- a consistent forgery, which
  // the chunk checks cannot see -- but the model's manifest says otherwise.
  MigrationOptions options;
  options.source = ExpertSource::kPeer;
  options.fetch_timeout = 2s;
  MigrationFixture f(options);
  REQUIRE(f.model.checkpoint->manifest() != nullptr);
  const std::vector<int32_t> layers = f.model.moe_layers();
  auto router = net::make_socket(f.context, zmq::socket_type::router);
  REQUIRE(router.is_ok());
  REQUIRE(net::bind(*router, "tcp://127.0.0.1:*").is_ok());
  const std::string endpoint = net::last_endpoint(*router);
  std::atomic<bool> stop{false};
  std::thread peer([&] {
    ExpertStore s(*f.model.checkpoint);
    if (!s.load({layers[0], 6}).is_ok()) return;
    ExpertBlobCache blobs(s);
    auto blob = blobs.get({layers[0], 6});
    std::vector<uint8_t> forged = (*blob)->bytes;
    forged[10] ^= 0x40;
    Sha256 hash;
    hash.update(forged);
    const std::array<uint8_t, 32> sha = hash.finish();
    while (!stop.load()) {
      auto m = net::receive_message(*router, 50ms, true);
      if (!m || !m->envelope.is_ok()) continue;
      const auto* req = std::get_if<proto::ExpertWeightsRequest>(&m->envelope->body);
      if (req == nullptr) continue;
      const uint64_t end = std::min<uint64_t>(forged.size(), req->offset + req->max_bytes);
      std::vector<uint8_t> bytes(forged.begin() + static_cast<long>(req->offset),
                                 forged.begin() + static_cast<long>(end));
      proto::Envelope e;
      e.body = proto::ExpertWeightsChunk{req->layer,    req->expert,
                                         req->offset,   static_cast<uint32_t>(bytes.size()),
                                         forged.size(), sha};
      (void)net::send_message(*router, e, bytes, m->routing_id);
    }
  });
  REQUIRE(f.migration->apply_now(test_support::make_placement(1, {{"b", endpoint, {6}}}, layers))
              .is_ok());
  Done done;
  REQUIRE(
      f.migration
          ->prepare(test_support::make_placement(2, {{"a", "", {6}}, {"b", endpoint, {6}}}, layers),
                    done.callback())
          .is_ok());
  const auto [version, status] = done.wait();
  stop.store(true);
  peer.join();
  CHECK(version == 2);
  REQUIRE_FALSE(status.is_ok());
  // Refused because the model's own digest (its manifest or split index) disagrees.
  CHECK(status.message().find("the model's") != std::string::npos);
  CHECK_FALSE(f.store.is_resident({layers[0], 6}));
}

}  // namespace dancemoe::node
