#include "edge_node/moe/distributed_executor.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/model/split/split_writer.h"
#include "common/net/zmq_transport.h"
#include "common/runtime/thread_pool.h"
#include "edge_node/expert_service/expert_service.h"
#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::vector<int32_t> kLow = {0, 1, 2, 3};
const std::vector<int32_t> kHigh = {3, 4, 5, 6, 7};

// A peer node: an ExpertStore with some experts and its expert service.
struct Peer {
  Peer(const test_support::TinyModel& model, zmq::context_t& context,
       const std::vector<int32_t>& experts)
      : store(*model.checkpoint) {
    for (int32_t l : model.moe_layers()) {
      for (int32_t e : experts) REQUIRE(store.load({l, e}).is_ok());
    }
    ExpertServiceOptions options;
    options.bind_endpoint = "tcp://127.0.0.1:*";
    options.precision = ComputePrecision::kF32;
    options.identity = {"peer", ""};
    auto s = ExpertService::start(context, model.config(), store, options);
    REQUIRE(s.is_ok());
    service = std::move(s).value();
    endpoint = service->bound_endpoint();
  }
  ExpertStore store;
  std::unique_ptr<ExpertService> service;
  std::string endpoint;
};

// Node "a" holding `local` experts, executing with a DistributedMoeExecutor.
struct Node {
  Node(const test_support::TinyModel& model, zmq::context_t& context,
       const std::vector<int32_t>& local, const ClusterPlacement& placement,
       DistributedExecutorOptions options, uint64_t offload_bytes)
      : config(model.config()),
        store(*model.checkpoint),
        pool(2),
        computer(std::make_unique<backend::CpuExpertEngine>(pool, ComputePrecision::kF32)),
        table(*HolderTable::build(placement, "a", model.config(), {"cpu"})),
        peers(context, PeerPoolOptions{}),
        log(model.config()) {
    for (int32_t l : model.moe_layers()) {
      for (int32_t e : local) REQUIRE(store.load({l, e}).is_ok());
    }
    if (offload_bytes > 0)
      offload = std::make_unique<OffloadCache>(*model.checkpoint, offload_bytes);
    options.node_id = "a";
    executor = std::make_unique<DistributedMoeExecutor>(config, store, computer, table, peers,
                                                        offload.get(), log, options);
  }
  const ModelConfig& config;
  ExpertStore store;
  ThreadPool pool;
  ExpertComputer computer;
  HolderTableHandle table;
  PeerPool peers;
  ActivationLog log;
  std::unique_ptr<OffloadCache> offload;
  std::unique_ptr<DistributedMoeExecutor> executor;
};

// The reference: one process holding every expert (LocalMoeExecutor).
std::vector<float> reference(const test_support::TinyModel& model, int64_t layer,
                             const std::vector<float>& x, const std::vector<float>& h0,
                             const RoutingDecision& routing) {
  ExpertStore all(*model.checkpoint);
  REQUIRE(all.load_all().is_ok());
  ThreadPool pool(1);
  ExpertComputer computer(std::make_unique<backend::CpuExpertEngine>(pool, ComputePrecision::kF32));
  LocalMoeExecutor local(all, computer, model.config().n_experts);
  std::vector<float> out = h0;
  REQUIRE(local
              .run_layer(layer, x.data(), routing.n_tokens, model.config().hidden_size, routing,
                         out.data())
              .is_ok());
  return out;
}

float max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(1.0f, std::fabs(b[i])));
  }
  return worst;
}

struct Case {
  int64_t layer;
  int64_t n_tokens;
  std::vector<float> x, h0;
  RoutingDecision routing;
};

Case make_case(const test_support::TinyModel& model, int64_t n_tokens, uint32_t seed) {
  const ModelConfig& c = model.config();
  Case k;
  k.layer = model.moe_layers()[1];
  k.n_tokens = n_tokens;
  k.x = test_support::random_hidden(n_tokens, c.hidden_size, seed);
  k.h0 = test_support::random_hidden(n_tokens, c.hidden_size, seed + 1);
  k.routing = test_support::random_routing(n_tokens, c.n_experts_per_token, c.n_experts, seed + 2);
  return k;
}

Status run(Node& node, const Case& k, std::vector<float>* out) {
  *out = k.h0;
  return node.executor->run_layer(k.layer, k.x.data(), k.n_tokens, node.config.hidden_size,
                                  k.routing, out->data());
}

}  // namespace

TEST_CASE("distributed executor: with every expert local it is exactly the local executor") {
  test_support::TinyModel model;
  zmq::context_t context;
  const std::vector<int32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  Node a(model, context, all, test_support::make_placement(1, {{"a", "", all}}, model.moe_layers()),
         {}, 0);
  const Case k = make_case(model, 7, 10);
  std::vector<float> out;
  REQUIRE(run(a, k, &out).is_ok());
  CHECK(out == reference(model, k.layer, k.x, k.h0, k.routing));
  CHECK(a.log.totals().local == static_cast<uint64_t>(7 * model.config().n_experts_per_token));
}

TEST_CASE("distributed executor: remote experts over f32 match one node to float re-association") {
  test_support::TinyModel model;
  zmq::context_t context;
  Peer b(model, context, kHigh);
  DistributedExecutorOptions options;
  options.wire_dtype = DType::kF32;
  Node a(model, context, kLow,
         test_support::make_placement(1, {{"a", "", kLow}, {"b", b.endpoint, kHigh}},
                                      model.moe_layers()),
         options, 0);
  for (int64_t n : {1, 5, 33}) {
    const Case k = make_case(model, n, static_cast<uint32_t>(100 + n));
    std::vector<float> out;
    REQUIRE(run(a, k, &out).is_ok());
    const float diff = max_rel_diff(out, reference(model, k.layer, k.x, k.h0, k.routing));
    MESSAGE("f32 wire, " << n << " tokens: max relative difference " << diff);
    CHECK(diff < 1e-5f);
  }
  const ServedCounts t = a.log.totals();
  CHECK(t.remote > 0);
  CHECK(t.local > 0);
  CHECK(t.offloaded == 0);
  CHECK(t.remote_calls == 3);  // one call per destination per layer
  CHECK(b.service->counters().calls.load() == 3);
}

TEST_CASE("distributed executor: bf16 on the wire stays within bf16 rounding of the reference") {
  test_support::TinyModel model;
  zmq::context_t context;
  Peer b(model, context, kHigh);
  Node a(model, context, kLow,
         test_support::make_placement(1, {{"a", "", kLow}, {"b", b.endpoint, kHigh}},
                                      model.moe_layers()),
         {}, 0);
  const Case k = make_case(model, 9, 7);
  std::vector<float> out;
  REQUIRE(run(a, k, &out).is_ok());
  const float diff = max_rel_diff(out, reference(model, k.layer, k.x, k.h0, k.routing));
  MESSAGE("bf16 wire: max relative difference " << diff);
  CHECK(diff > 0);
  CHECK(diff < 2e-2f);
}

TEST_CASE("distributed executor: a dead replica is skipped for another one holding the expert") {
  test_support::TinyModel model;
  zmq::context_t context;
  Peer b(model, context, kHigh);
  Peer c(model, context, kHigh);
  DistributedExecutorOptions options;
  options.wire_dtype = DType::kF32;
  options.call_timeout = 300ms;
  Node a(model, context, kLow,
         test_support::make_placement(
             1, {{"a", "", kLow}, {"b", b.endpoint, kHigh}, {"c", c.endpoint, kHigh}},
             model.moe_layers()),
         options, 0);
  const Case k = make_case(model, 6, 3);
  std::vector<float> out;
  REQUIRE(run(a, k, &out).is_ok());  // connects to the chosen peer
  b.service->stop();
  c.service->stop();
  // Restart c only (same endpoint): b is dead, c answers.
  ExpertServiceOptions again;
  again.bind_endpoint = c.endpoint;
  again.precision = ComputePrecision::kF32;
  // ZeroMQ releases the port asynchronously after close: retry the bind briefly.
  Result<std::unique_ptr<ExpertService>> c2 = unavailable("not started");
  for (int i = 0; i < 100 && !c2.is_ok(); ++i) {
    c2 = ExpertService::start(context, model.config(), c.store, again);
    if (!c2.is_ok()) std::this_thread::sleep_for(20ms);
  }
  REQUIRE(c2.is_ok());
  for (int i = 0; i < 3; ++i) {
    const Clock::time_point start = Clock::now();
    REQUIRE(run(a, k, &out).is_ok());
    CHECK(Clock::now() - start < 2 * options.call_timeout + 500ms);
    CHECK(max_rel_diff(out, reference(model, k.layer, k.x, k.h0, k.routing)) < 1e-5f);
  }
  CHECK(a.log.totals().offloaded == 0);
  CHECK((*c2)->counters().calls.load() >= 3);
}

TEST_CASE(
    "distributed executor: no peer answering -> offload cache, none -> a clear error, bounded") {
  test_support::TinyModel model;
  zmq::context_t context;
  // A peer that never answers: a ROUTER bound and silent.
  auto silent = net::make_socket(context, zmq::socket_type::router);
  REQUIRE(silent.is_ok());
  REQUIRE(net::bind(*silent, "tcp://127.0.0.1:*").is_ok());
  const std::string endpoint = net::last_endpoint(*silent);
  DistributedExecutorOptions options;
  options.wire_dtype = DType::kF32;
  options.call_timeout = 200ms;
  const ClusterPlacement placement = test_support::make_placement(
      1, {{"a", "", kLow}, {"b", endpoint, kHigh}}, model.moe_layers());
  const Case k = make_case(model, 4, 21);

  SUBCASE("offload cache computes the experts here") {
    Node a(model, context, kLow, placement, options, 8 << 20);
    std::vector<float> out;
    const Clock::time_point start = Clock::now();
    REQUIRE(run(a, k, &out).is_ok());
    const auto took = Clock::now() - start;
    CHECK(took >= 200ms);
    CHECK(took < 1500ms);
    CHECK(max_rel_diff(out, reference(model, k.layer, k.x, k.h0, k.routing)) < 1e-5f);
    CHECK(a.log.totals().offloaded > 0);
    CHECK(a.log.totals().remote_failures == 1);
    // The peer is now in back-off: the next layer goes to the offload cache at once.
    const Clock::time_point again = Clock::now();
    REQUIRE(run(a, k, &out).is_ok());
    CHECK(Clock::now() - again < 150ms);
  }
  SUBCASE("without an offload cache the layer fails with a message naming the expert") {
    Node a(model, context, kLow, placement, options, 0);
    std::vector<float> out;
    const Clock::time_point start = Clock::now();
    Status s = run(a, k, &out);
    CHECK(Clock::now() - start < 1500ms);
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.code() == StatusCode::kUnavailable);
    CHECK(s.message().find("of layer " + std::to_string(k.layer)) != std::string::npos);
    CHECK(s.message().find("no answer within 200 ms") != std::string::npos);
    CHECK(s.message().find("--offload-cache 0") != std::string::npos);
  }
}

TEST_CASE("distributed executor: an expert nobody holds is computed by the offload cache") {
  test_support::TinyModel model;
  zmq::context_t context;
  Node a(model, context, kLow,
         test_support::make_placement(1, {{"a", "", kLow}}, model.moe_layers()), {}, 8 << 20);
  const Case k = make_case(model, 3, 5);
  std::vector<float> out;
  REQUIRE(run(a, k, &out).is_ok());
  CHECK(a.log.totals().remote_calls == 0);
  CHECK(a.log.totals().offloaded > 0);
  CHECK(out == reference(model, k.layer, k.x, k.h0, k.routing));
}

TEST_CASE("distributed executor: a result with NaN or Inf fails that call -- never added") {
  test_support::TinyModel model;
  zmq::context_t context;
  // A peer that answers every call at once with well-formed results full of
  // NaN (or Inf): before, the executor added them into the hidden state.
  auto router = net::make_socket(context, zmq::socket_type::router);
  REQUIRE(router.is_ok());
  REQUIRE(net::bind(*router, "tcp://127.0.0.1:*").is_ok());
  const std::string endpoint = net::last_endpoint(*router);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::thread poisoner([&] {
    while (!stop.load()) {
      auto m = net::receive_message(*router, 50ms, /*router=*/true);
      if (!m || !m->envelope.is_ok()) continue;
      const auto* call = std::get_if<proto::ExpertCall>(&m->envelope->body);
      if (call == nullptr) continue;
      const float bad =
          answered.fetch_add(1) % 2 == 0 ? std::nanf("") : std::numeric_limits<float>::infinity();
      std::vector<float> rows(static_cast<size_t>(call->n_tokens) * call->hidden, bad);
      std::vector<uint8_t> payload(rows.size() * 4);
      std::memcpy(payload.data(), rows.data(), payload.size());
      proto::Envelope e;
      e.sender = "b";
      e.sequence = 1;
      e.body = proto::ExpertResult{call->call_id, call->n_tokens, call->hidden, DType::kF32, 1};
      (void)net::send_message(*router, e, payload, m->routing_id);
    }
  });
  // Stopped and joined however the test ends (a failed REQUIRE throws).
  struct Join {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Join() {
      stop.store(true);
      thread.join();
    }
  } join{stop, poisoner};
  DistributedExecutorOptions options;
  options.wire_dtype = DType::kF32;
  options.call_timeout = 2000ms;
  const ClusterPlacement placement = test_support::make_placement(
      1, {{"a", "", kLow}, {"b", endpoint, kHigh}}, model.moe_layers());
  const Case k = make_case(model, 4, 33);
  Node a(model, context, kLow, placement, options, 8 << 20);
  std::vector<float> out;
  for (int round = 0; round < 2; ++round) {
    REQUIRE(run(a, k, &out).is_ok());
    for (float v : out) REQUIRE(std::isfinite(v));
    // Computed here instead (the offload cache), as for any failed call.
    CHECK(max_rel_diff(out, reference(model, k.layer, k.x, k.h0, k.routing)) < 1e-5f);
  }
  CHECK(answered.load() >= 1);
  CHECK(a.log.totals().remote_failures >= 1);
  CHECK(a.log.totals().offloaded > 0);
}

// Weight gathering: node a (a partial checkpoint: only its own experts'
// files) computes a long prompt's remote experts itself with weights
// fetched from the peer over a link measured slow, and the same result.
TEST_CASE("distributed executor: a long prompt over a slow link gathers the weights, same output") {
  test_support::TinyModel model;
  zmq::context_t context;
  Peer b(model, context, kHigh);
  dancemoe::testing::TempDir dir("gather");
  REQUIRE(write_split(*model.checkpoint, dir.path()).is_ok());
  for (int32_t l : model.moe_layers()) {
    for (int32_t e = 4; e < 8; ++e) {
      std::filesystem::remove(dir.path() / "experts" / ExpertFiles::file_name({l, e}));
    }
  }
  auto split = Checkpoint::open(dir.path());
  REQUIRE(split.is_ok());
  const Checkpoint& ckpt = **split;
  ExpertStore store(ckpt);
  for (int32_t l : model.moe_layers()) {
    for (int32_t e : {0, 1, 2}) REQUIRE(store.load({l, e}).is_ok());
  }
  ThreadPool pool(2);
  ExpertComputer computer(std::make_unique<backend::CpuExpertEngine>(pool, ComputePrecision::kF32));
  const std::vector<int32_t> mine = {0, 1, 2};
  HolderTableHandle table(
      *HolderTable::build(test_support::make_placement(
                              1, {{"a", "", mine}, {"b", b.endpoint, kHigh}}, model.moe_layers()),
                          "a", model.config(), {"cpu"}));
  PeerPool peers(context, PeerPoolOptions{});
  ActivationLog log(model.config());
  FetcherOptions fetch;
  fetch.node_id = "a";
  OffloadCache offload(ckpt, 1 << 20, std::make_unique<ExpertFetcher>(context, fetch));
  DistributedExecutorOptions options;
  options.node_id = "a";
  options.wire_dtype = DType::kF32;
  DistributedMoeExecutor executor(model.config(), store, computer, table, peers, &offload, log,
                                  options);
  const Case k = make_case(model, 512, 55);
  const std::vector<float> want = reference(model, k.layer, k.x, k.h0, k.routing);

  // An unmeasured link: the tokens are sent (and measure it).
  std::vector<float> out = k.h0;
  REQUIRE(executor
              .run_layer(k.layer, k.x.data(), k.n_tokens, model.config().hidden_size, k.routing,
                         out.data())
              .is_ok());
  CHECK(executor.gathering().experts_fetched.load() == 0);
  CHECK(b.service->counters().calls.load() == 1);
  // The link as a ~2 MB/s one with a ~2 ms round trip measures: large calls
  // set its bandwidth, then small ones its overhead. Bytes decide by a wide
  // margin (~75 ms a layer), not the compute pace this node measures with a
  // wall clock: a descheduled -O0 test under CI's load once flipped a choice
  // that hung on ~1.5 ms.
  PeerLink* link = peers.find("b");
  REQUIRE(link != nullptr);
  for (int i = 0; i < 8; ++i) {
    link->estimate().on_success(1'000'000.0 + 2000.0 + 100.0, 1'000'000, 10, 100.0);
  }
  for (int i = 0; i < 30; ++i) link->estimate().on_success(2000.0 + 100.0, 1000, 10, 100.0);
  REQUIRE(link->estimate().us_per_byte() > 0.3);
  REQUIRE(link->estimate().overhead_us() < 5000.0);

  out = k.h0;
  REQUIRE(executor
              .run_layer(k.layer, k.x.data(), k.n_tokens, model.config().hidden_size, k.routing,
                         out.data())
              .is_ok());
  CHECK(max_rel_diff(out, want) < 1e-5f);
  const uint64_t fetched = executor.gathering().experts_fetched.load();
  CHECK(fetched >=
        4);  // experts 4..7 of this layer; 3 too unless it is gathered from a's own files
  CHECK(executor.gathering().weight_bytes.load() >= 4 * ckpt.expert_bytes(k.layer, 4));
  CHECK(executor.gathering().activation_bytes_avoided.load() > 0);
  CHECK(b.service->counters().calls.load() == 1);  // no call this time
  CHECK(b.service->counters().chunks.load() >= 4);
  CHECK(log.totals().offloaded > 0);

  // Again: the weights are cached, nothing crosses the link.
  const uint64_t chunks = b.service->counters().chunks.load();
  out = k.h0;
  REQUIRE(executor
              .run_layer(k.layer, k.x.data(), k.n_tokens, model.config().hidden_size, k.routing,
                         out.data())
              .is_ok());
  CHECK(max_rel_diff(out, want) < 1e-5f);
  CHECK(executor.gathering().experts_cached.load() >= 4);
  CHECK(b.service->counters().chunks.load() == chunks);
  CHECK(b.service->counters().calls.load() == 1);

  // Turned off, the tokens are sent again.
  options.weight_gathering = false;
  DistributedMoeExecutor off(model.config(), store, computer, table, peers, &offload, log, options);
  out = k.h0;
  REQUIRE(off.run_layer(k.layer, k.x.data(), k.n_tokens, model.config().hidden_size, k.routing,
                        out.data())
              .is_ok());
  CHECK(off.gathering().experts_fetched.load() + off.gathering().experts_cached.load() == 0);
  CHECK(b.service->counters().calls.load() == 2);
}

}  // namespace dancemoe::node
