// A SchedulerService driven directly by tests: a FakeClock, a real SQLite
// store (a file in a temporary directory, so restarts can reopen it), and
// helpers that build envelopes and collect what the service sends.
#pragma once

#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/net/curve_keys.h"
#include "common/runtime/clock.h"
#include "scheduler/daemon/service.h"
#include "tests/support/paths.h"

namespace dancemoe::scheduler::test {

// The tiny synthetic model's shape: 4 layers, layer 1 dense, 8 experts, top-2.
inline ModelInfo tiny_model(uint64_t expert_bytes = 1000) {
  return ModelInfo::synthetic("model-tiny", 4, 8, 2, expert_bytes, {0, 2, 3});
}

inline ServiceOptions fast_options() {
  ServiceOptions o;
  o.interval_ms = 60'000;
  o.heartbeat_interval_ms = 1'000;
  o.heartbeat_misses = 3;
  o.report_interval_ms = 1'000;
  o.prepare_timeout_ms = 5'000;
  o.cold_start_settle_ms = 2'000;
  o.retention_check_ms = 3'600'000;
  o.planner.horizon_s = 300.0;
  return o;
}

template <typename T>
const T* find_body(const std::vector<Outgoing>& out, const std::string& routing_id = "") {
  for (const Outgoing& o : out) {
    if (!routing_id.empty() && o.routing_id != routing_id) continue;
    if (const T* body = std::get_if<T>(&o.envelope.body)) return body;
  }
  return nullptr;
}

class Harness {
 public:
  explicit Harness(ServiceOptions options = fast_options(), ModelInfo model = tiny_model(),
                   const std::string& db_path = "")
      : dir_(db_path.empty() ? std::make_unique<testing::TempDir>("service") : nullptr),
        path_(db_path.empty() ? (dir_->path() / "scheduler.db").string() : db_path),
        options_(std::move(options)),
        model_(std::move(model)) {
    spdlog::set_level(spdlog::level::warn);
    open();
  }

  void open() {
    service_.reset();
    store_.reset();
    auto store = store::Store::open(path_);
    REQUIRE(store.is_ok());
    store_ = std::move(*store);
    service_ = std::make_unique<SchedulerService>(options_, model_, store_.get(), &clock_, keys_);
    REQUIRE(service_->start().is_ok());
  }

  // Closes and reopens the store and the service (a scheduler restart).
  void restart() { open(); }

  // Restarts the service with keys (docs/security.md): operator key "op"
  // and node keys `nodes`, generated into the test's directory; messages
  // then go through deliver_as with a sender key.
  void secure(const std::vector<std::string>& nodes) {
    const std::filesystem::path dir = std::filesystem::path(path_).parent_path() / "keys";
    std::filesystem::create_directories(dir / "nodes");
    std::filesystem::create_directories(dir / "operators");
    for (const std::string& name : nodes) {
      auto pair = net::write_key_pair(dir, name);
      REQUIRE(pair.is_ok());
      REQUIRE(net::write_public_key_file(dir / "nodes", name, pair->public_key).is_ok());
      key_of[name] = pair->public_key;
    }
    auto op = net::write_key_pair(dir, "op");
    REQUIRE(op.is_ok());
    REQUIRE(net::write_public_key_file(dir / "operators", "op", op->public_key).is_ok());
    key_of["op"] = op->public_key;
    auto stranger = net::generate_key_pair();
    REQUIRE(stranger.is_ok());
    key_of["stranger"] = stranger->public_key;
    auto ring = KeyRing::load(dir / "nodes", dir / "operators");
    INFO(ring.status().to_string());
    REQUIRE(ring.is_ok());
    keys_ = std::move(*ring);
    open();
  }
  std::map<std::string, std::string> key_of;  // key name -> Z85 public key

  // A message from the holder of `key_name`'s key (see secure()).
  std::vector<Outgoing> deliver_as(const std::string& key_name, const std::string& routing_id,
                                   proto::Envelope env) {
    net::ReceivedMessage message;
    message.routing_id = routing_id;
    message.envelope = std::move(env);
    message.sender_key = key_of.at(key_name);
    service_->handle(message);
    return service_->take_outbox();
  }
  // Node `node` speaking with key `key_name` (its own, by default).
  std::vector<Outgoing> send_as(const std::string& key_name, const std::string& node,
                                proto::Body body) {
    return deliver_as(key_name, "r-" + node, envelope(node, std::move(body)));
  }
  Result<nlohmann::json> query_as(const std::string& key_name, const std::string& what,
                                  const nlohmann::json& args = nlohmann::json::object()) {
    auto out =
        deliver_as(key_name, "cli", envelope("cli", proto::StatusRequest{what, args.dump()}));
    if (const auto* reply = find_body<proto::StatusReply>(out, "cli")) {
      return nlohmann::json::parse(reply->json);
    }
    if (const auto* error = find_body<proto::Error>(out, "cli")) {
      return Status(error->code, error->message);
    }
    return internal_error("no answer to the status query");
  }

  proto::Envelope envelope(const std::string& sender, proto::Body body, uint64_t sequence = 0) {
    proto::Envelope env;
    env.cluster_id = options_.cluster_id;
    env.sender = sender;
    env.sequence = sequence == 0 ? ++sequence_ : sequence;
    env.body = std::move(body);
    return env;
  }

  std::vector<Outgoing> deliver(const std::string& routing_id, proto::Envelope env) {
    net::ReceivedMessage message;
    message.routing_id = routing_id;
    message.envelope = std::move(env);
    service_->handle(message);
    return service_->take_outbox();
  }

  std::vector<Outgoing> deliver_error(const std::string& routing_id, Status status) {
    net::ReceivedMessage message;
    message.routing_id = routing_id;
    message.envelope = std::move(status);
    service_->handle(message);
    return service_->take_outbox();
  }

  std::vector<Outgoing> send(const std::string& node, proto::Body body, uint64_t sequence = 0) {
    return deliver("r-" + node, envelope(node, std::move(body), sequence));
  }

  std::vector<Outgoing> advance(int64_t ms) {
    clock_.advance_ms(ms);
    service_->tick();
    return service_->take_outbox();
  }

  proto::Register registration(const std::string& node, uint64_t budget_bytes,
                               double load_bytes_per_s = 1e9) {
    proto::Register reg;
    reg.node_id = node;
    reg.model_id = model_.model_id;
    reg.devices = {{"gpu0", budget_bytes, load_bytes_per_s, "cuda"}};
    reg.expert_endpoint = "tcp://" + node + ":5551";
    return reg;
  }

  std::vector<Outgoing> register_node(const std::string& node, uint64_t budget_bytes,
                                      double load_bytes_per_s = 1e9) {
    auto out = send(node, registration(node, budget_bytes, load_bytes_per_s));
    const auto* reply = find_body<proto::RegisterReply>(out);
    REQUIRE(reply != nullptr);
    REQUIRE(reply->accepted);
    return out;
  }

  // Heartbeats from every listed node, then advances the clock.
  std::vector<Outgoing> heartbeat_and_advance(const std::vector<std::string>& nodes, int64_t ms) {
    std::vector<Outgoing> all;
    for (const std::string& n : nodes) {
      auto out = send(n, proto::Heartbeat{service_->committed_version(), 0});
      all.insert(all.end(), out.begin(), out.end());
    }
    auto out = advance(ms);
    all.insert(all.end(), out.begin(), out.end());
    return all;
  }

  // Answers every PlacementPrepare in `out` with Ready from its node.
  std::vector<Outgoing> answer_ready(const std::vector<Outgoing>& out) {
    std::vector<Outgoing> all;
    for (const Outgoing& o : out) {
      const auto* prepare = std::get_if<proto::PlacementPrepare>(&o.envelope.body);
      if (prepare == nullptr) continue;
      const std::string node = o.routing_id.substr(2);
      auto replies = send(node, proto::Ready{prepare->version});
      all.insert(all.end(), replies.begin(), replies.end());
    }
    return all;
  }

  Result<nlohmann::json> query(const std::string& what,
                               const nlohmann::json& args = nlohmann::json::object()) {
    auto out = deliver("cli", envelope("cli", proto::StatusRequest{what, args.dump()}));
    if (const auto* reply = find_body<proto::StatusReply>(out, "cli")) {
      return nlohmann::json::parse(reply->json);
    }
    if (const auto* error = find_body<proto::Error>(out, "cli")) {
      return Status(error->code, error->message);
    }
    return internal_error("no answer to the status query");
  }

  FakeClock& clock() { return clock_; }
  SchedulerService& service() { return *service_; }
  store::Store& store() { return *store_; }
  const ModelInfo& model() const { return model_; }
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<testing::TempDir> dir_;
  std::string path_;
  ServiceOptions options_;
  ModelInfo model_;
  FakeClock clock_;
  KeyRing keys_ = KeyRing::insecure();
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<SchedulerService> service_;
  uint64_t sequence_ = 0;
};

// A report of `tokens` tokens in which every listed (layer, expert) was
// picked `count` times.
inline proto::ActivationReport report_of(uint64_t tokens, const std::vector<ExpertRef>& experts,
                                         uint32_t count, uint64_t window_start_ms = 1000) {
  proto::ActivationReport r;
  r.window_start_ms = window_start_ms;
  r.window_end_ms = window_start_ms + 1000;
  r.tokens = tokens;
  r.requests = 1;
  for (const ExpertRef& x : experts) r.counts.push_back({x.layer, x.expert, count});
  r.local_calls = 10;
  r.local_mean_latency_us = 100.0;
  r.local_p99_latency_us = 150.0;
  return r;
}

}  // namespace dancemoe::scheduler::test
