#include "edge_node/expert_service/expert_service.h"

#include <doctest/doctest.h>

#include <thread>

#include "common/net/zmq_transport.h"
#include "edge_node/remote/wire_tensor.h"
#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {
namespace {

using namespace std::chrono_literals;

// `workers` 1: calls computed on the receiving thread; 2+: handed to workers.
struct Service {
  explicit Service(int workers = 2, size_t max_queued = 64) : store(*model.checkpoint) {
    for (int32_t e = 0; e < 4; ++e) REQUIRE(store.load({0, e}).is_ok());
    ExpertServiceOptions options;
    options.bind_endpoint = "tcp://127.0.0.1:*";
    options.n_workers = workers;
    options.max_queued = max_queued;
    options.precision = ComputePrecision::kF32;
    options.identity = {"b", ""};
    auto s = ExpertService::start(context, model.config(), store, options);
    REQUIRE(s.is_ok());
    service = std::move(s).value();
  }
  zmq::socket_t dealer() {
    auto d = net::make_socket(context, zmq::socket_type::dealer);
    REQUIRE(d.is_ok());
    REQUIRE(net::connect(*d, service->bound_endpoint()).is_ok());
    return std::move(d).value();
  }
  proto::Envelope call(uint64_t id, uint32_t n_tokens) {
    proto::ExpertCall c;
    c.call_id = id;
    c.layer = 0;
    c.n_tokens = n_tokens;
    c.hidden = static_cast<uint32_t>(model.config().hidden_size);
    c.dtype = DType::kBF16;
    for (uint32_t t = 0; t < n_tokens; ++t)
      c.assignments.push_back({t, static_cast<uint16_t>(t % 4), 0.5f});
    proto::Envelope e;
    e.sender = "a";
    e.sequence = id;
    e.body = c;
    return e;
  }

  test_support::TinyModel model;
  zmq::context_t context;
  ExpertStore store;
  std::unique_ptr<ExpertService> service;
};

}  // namespace

TEST_CASE("expert service: answers calls over TCP, from several peers at once") {
  for (const int workers : {1, 2}) {
    CAPTURE(workers);
    Service s(workers);
    CHECK(s.service->bound_endpoint().rfind("tcp://127.0.0.1:", 0) == 0);
    const int64_t hidden = s.model.config().hidden_size;
    auto peer = [&](uint64_t first_id, int* answered) {
      zmq::socket_t d = s.dealer();
      for (uint64_t id = first_id; id < first_id + 20; ++id) {
        const std::vector<float> x =
            test_support::random_hidden(4, hidden, static_cast<uint32_t>(id));
        std::vector<uint8_t> payload;
        encode_rows(x.data(), 4, hidden, DType::kBF16, &payload);
        REQUIRE(net::send_message(d, s.call(id, 4), payload).is_ok());
        auto reply = net::receive_message(d, 5s, false);
        REQUIRE(reply.has_value());
        REQUIRE(reply->envelope.is_ok());
        const auto* result = std::get_if<proto::ExpertResult>(&reply->envelope->body);
        REQUIRE(result != nullptr);
        CHECK(result->call_id == id);
        CHECK(reply->payload.size() == static_cast<size_t>(4 * hidden * 2));
        ++*answered;
      }
    };
    int a = 0, b = 0;
    std::thread ta(peer, 1000, &a);
    std::thread tb(peer, 2000, &b);
    ta.join();
    tb.join();
    CHECK(a == 20);
    CHECK(b == 20);
    CHECK(s.service->counters().calls.load() == 40);
  }
}

TEST_CASE("expert service: a full queue answers resource_exhausted, and every call is answered") {
  for (const int workers : {1, 2}) {
    CAPTURE(workers);
    Service s(workers, /*max_queued=*/1);
    zmq::socket_t d = s.dealer();
    const int64_t hidden = s.model.config().hidden_size;
    const std::vector<float> x = test_support::random_hidden(256, hidden, 3);
    std::vector<uint8_t> payload;
    encode_rows(x.data(), 256, hidden, DType::kBF16, &payload);
    constexpr int kCalls = 40;
    for (uint64_t id = 1; id <= kCalls; ++id) {
      REQUIRE(net::send_message(d, s.call(id, 256), payload).is_ok());
    }
    int results = 0, refused = 0;
    for (int i = 0; i < kCalls; ++i) {
      auto reply = net::receive_message(d, 10s, false);
      REQUIRE(reply.has_value());
      REQUIRE(reply->envelope.is_ok());
      if (std::holds_alternative<proto::ExpertResult>(reply->envelope->body)) {
        ++results;
      } else {
        const auto& error = std::get<proto::Error>(reply->envelope->body);
        CHECK(error.code == StatusCode::kResourceExhausted);
        CHECK(error.message.find("overloaded") != std::string::npos);
        ++refused;
      }
    }
    MESSAGE(workers << " worker(s), queue of 1: " << results << " computed, " << refused
                    << " refused of " << kCalls << " calls sent at once");
    CHECK(results >= 1);
    CHECK(refused >= 1);
    CHECK(results + refused == kCalls);
  }
}

TEST_CASE("expert service: a peer sending garbage gets Error replies and the service goes on") {
  Service s;
  zmq::socket_t d = s.dealer();
  const std::string junk = "\x01\x02 this is not a flatbuffer envelope";
  d.send(zmq::buffer(junk), zmq::send_flags::none);
  auto reply = net::receive_message(d, 5s, false);
  REQUIRE(reply.has_value());
  REQUIRE(reply->envelope.is_ok());
  CHECK(std::get<proto::Error>(reply->envelope->body).code == StatusCode::kInvalidArgument);

  // Too many frames.
  for (int i = 0; i < 3; ++i) d.send(zmq::buffer(junk), zmq::send_flags::sndmore);
  d.send(zmq::buffer(junk), zmq::send_flags::none);
  reply = net::receive_message(d, 5s, false);
  REQUIRE(reply.has_value());
  CHECK(std::get<proto::Error>(reply->envelope->body).message.find("frames") != std::string::npos);

  // A call whose tensor frame is missing.
  REQUIRE(net::send_message(d, s.call(5, 2)).is_ok());
  reply = net::receive_message(d, 5s, false);
  REQUIRE(reply.has_value());
  CHECK(std::get<proto::Error>(reply->envelope->body).in_reply_to == 5);

  // Still serving.
  const std::vector<float> x = test_support::random_hidden(1, s.model.config().hidden_size, 2);
  std::vector<uint8_t> payload;
  encode_rows(x.data(), 1, s.model.config().hidden_size, DType::kBF16, &payload);
  REQUIRE(net::send_message(d, s.call(6, 1), payload).is_ok());
  reply = net::receive_message(d, 5s, false);
  REQUIRE(reply.has_value());
  CHECK(std::holds_alternative<proto::ExpertResult>(reply->envelope->body));
  CHECK(s.service->counters().bad_messages.load() == 3);
}

TEST_CASE("expert service: binding a busy endpoint is an error naming the flag") {
  Service s;
  ExpertServiceOptions options;
  options.bind_endpoint = s.service->bound_endpoint();
  auto again = ExpertService::start(s.context, s.model.config(), s.store, options);
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.status().message().find("--experts") != std::string::npos);
}

}  // namespace dancemoe::node
