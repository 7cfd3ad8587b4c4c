#include "edge_node/expert_service/request_handler.h"

#include <doctest/doctest.h>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/base/sha256.h"
#include "common/model/split/split_writer.h"
#include "common/runtime/thread_pool.h"
#include "edge_node/remote/wire_tensor.h"
#include "tests/edge_node/node_test_support.h"
#include "tests/support/model_fixtures.h"

namespace dancemoe::node {
namespace {

struct HandlerFixture {
  HandlerFixture()
      : store(*model.checkpoint),
        blobs(store),
        pool(2),
        computer(std::make_unique<backend::CpuExpertEngine>(pool, ComputePrecision::kF32)) {
    for (int32_t e : {0, 1, 2, 3}) REQUIRE(store.load({0, e}).is_ok());
    handler = std::make_unique<ExpertRequestHandler>(model.config(), store, blobs, computer,
                                                     ServiceIdentity{"b", "lab"}, limits, counters);
  }

  proto::Envelope call_envelope(proto::ExpertCall call) {
    proto::Envelope e;
    e.cluster_id = "lab";
    e.sender = "a";
    e.sequence = 42;
    e.body = std::move(call);
    return e;
  }

  // A call of 3 tokens to experts 1 and 3 of layer 0.
  proto::ExpertCall good_call(DType dtype) {
    proto::ExpertCall c;
    c.call_id = 9;
    c.layer = 0;
    c.n_tokens = 3;
    c.hidden = static_cast<uint32_t>(model.config().hidden_size);
    c.dtype = dtype;
    c.assignments = {{0, 3, 0.25f}, {0, 1, 0.75f}, {2, 1, 0.5f}, {1, 3, 1.0f}};
    return c;
  }

  Status error_of(const Reply& reply) {
    const auto* err = std::get_if<proto::Error>(&reply.envelope.body);
    REQUIRE(err != nullptr);
    CHECK(err->in_reply_to == 42);
    return Status(err->code, err->message);
  }

  test_support::TinyModel model;
  ExpertStore store;
  ExpertBlobCache blobs;
  ThreadPool pool;
  ExpertComputer computer;
  ServiceLimits limits{.max_call_tokens = 16, .max_chunk_bytes = 1000};
  ServiceCounters counters;
  std::unique_ptr<ExpertRequestHandler> handler;
};

}  // namespace

TEST_CASE("expert request: the reply is the per-token gate-weighted sum, equal to local compute") {
  HandlerFixture f;
  const int64_t hidden = f.model.config().hidden_size;
  const std::vector<float> x = test_support::random_hidden(3, hidden, 11);
  std::vector<uint8_t> payload;
  encode_rows(x.data(), 3, hidden, DType::kF32, &payload);
  const Reply reply = f.handler->handle(f.call_envelope(f.good_call(DType::kF32)), payload);
  const auto* result = std::get_if<proto::ExpertResult>(&reply.envelope.body);
  REQUIRE(result != nullptr);
  CHECK(result->call_id == 9);
  CHECK(result->n_tokens == 3);
  CHECK(result->dtype == DType::kF32);
  CHECK(reply.envelope.sender == "b");
  std::vector<float> got(static_cast<size_t>(3 * hidden));
  REQUIRE(decode_rows(reply.payload, DType::kF32, 3 * hidden, got.data()).is_ok());

  // Reference: the same experts computed locally, ascending expert order.
  ThreadPool pool(1);
  ExpertComputer reference(
      std::make_unique<backend::CpuExpertEngine>(pool, ComputePrecision::kF32));
  std::vector<ExpertJob> jobs(2);
  for (auto [j, e] : {std::pair{0, 1}, std::pair{1, 3}}) {
    auto w = f.store.get({0, e});
    jobs[static_cast<size_t>(j)].gate = w->gate;
    jobs[static_cast<size_t>(j)].up = w->up;
    jobs[static_cast<size_t>(j)].down = w->down;
  }
  jobs[0].tokens = {0, 2};
  jobs[0].weights = {0.75f, 0.5f};
  jobs[1].tokens = {0, 1};
  jobs[1].weights = {0.25f, 1.0f};
  std::vector<float> want(got.size(), 0.0f);
  reference.run(jobs, x.data(), 3, hidden, want.data());
  CHECK(got == want);  // bit for bit: same order, thread-count independent
  CHECK(f.counters.calls.load() == 1);
  CHECK(f.counters.call_tokens.load() == 3);

  // bf16 on the wire: the answer comes back in bf16.
  payload.clear();
  encode_rows(x.data(), 3, hidden, DType::kBF16, &payload);
  const Reply bf16 = f.handler->handle(f.call_envelope(f.good_call(DType::kBF16)), payload);
  REQUIRE(std::holds_alternative<proto::ExpertResult>(bf16.envelope.body));
  CHECK(bf16.payload.size() == static_cast<size_t>(3 * hidden * 2));
}

TEST_CASE("expert request: every invalid call gets an Error naming the problem") {
  HandlerFixture f;
  const int64_t hidden = f.model.config().hidden_size;
  std::vector<uint8_t> payload;
  const std::vector<float> x = test_support::random_hidden(3, hidden, 1);
  encode_rows(x.data(), 3, hidden, DType::kF32, &payload);
  auto refuse = [&](proto::ExpertCall call, std::span<const uint8_t> bytes) {
    return f.error_of(f.handler->handle(f.call_envelope(std::move(call)), bytes));
  };

  proto::ExpertCall c = f.good_call(DType::kF32);
  c.layer = 99;
  CHECK(refuse(c, payload).message().find("layer 99 is out of range") != std::string::npos);
  c = f.good_call(DType::kF32);
  c.layer = 1;  // dense in the tiny model
  CHECK(refuse(c, payload).message().find("dense layer") != std::string::npos);
  c = f.good_call(DType::kF32);
  c.assignments[1].expert = 8;
  CHECK(refuse(c, payload).message().find("expert 8 is out of range") != std::string::npos);
  c = f.good_call(DType::kF32);
  c.assignments[1].expert = 6;  // valid but not held here
  Status not_held = refuse(c, payload);
  CHECK(not_held.code() == StatusCode::kNotFound);
  CHECK(not_held.message().find("not held by node 'b'") != std::string::npos);
  c = f.good_call(DType::kF32);
  c.hidden = 32;
  CHECK(refuse(c, payload).message().find("hidden size") != std::string::npos);
  c = f.good_call(DType::kF32);
  c.n_tokens = 17;
  CHECK(refuse(c, payload).code() == StatusCode::kResourceExhausted);
  c = f.good_call(DType::kF32);
  CHECK(refuse(c, std::span<const uint8_t>(payload).first(payload.size() - 1))
            .message()
            .find("tensor frame") != std::string::npos);
  c = f.good_call(DType::kF16);
  CHECK(refuse(c, std::span<const uint8_t>(payload).first(payload.size() / 2))
            .message()
            .find("not served") != std::string::npos);

  proto::Envelope other = f.call_envelope(f.good_call(DType::kF32));
  other.cluster_id = "elsewhere";
  CHECK(f.error_of(f.handler->handle(other, payload)).code() == StatusCode::kFailedPrecondition);
  proto::Envelope wrong_type = f.call_envelope(f.good_call(DType::kF32));
  wrong_type.body = proto::Heartbeat{};
  CHECK(f.error_of(f.handler->handle(wrong_type, {})).message().find("Heartbeat") !=
        std::string::npos);
  const Reply undecodable = f.handler->handle(invalid_argument("garbage"), {});
  CHECK(std::get<proto::Error>(undecodable.envelope.body).message == "garbage");
  CHECK(f.counters.bad_messages.load() == 11);
  CHECK(f.counters.calls.load() == 0);
}

TEST_CASE("expert request: weights are served in chunks with the SHA-256 of the whole expert") {
  HandlerFixture f;
  proto::Envelope e = f.call_envelope({});
  std::vector<uint8_t> assembled;
  std::array<uint8_t, 32> sha{};
  while (true) {
    e.body = proto::ExpertWeightsRequest{0, 2, assembled.size(), 4096};  // capped at 1000
    const Reply r = f.handler->handle(e, {});
    const auto* chunk = std::get_if<proto::ExpertWeightsChunk>(&r.envelope.body);
    REQUIRE(chunk != nullptr);
    CHECK(chunk->length <= 1000);
    CHECK(chunk->offset == assembled.size());
    CHECK(chunk->total_bytes == f.model.checkpoint->expert_bytes(0, 2));
    sha = chunk->sha256;
    assembled.insert(assembled.end(), r.payload.begin(), r.payload.end());
    if (assembled.size() == chunk->total_bytes) break;
  }
  Sha256 h;
  h.update(assembled);
  CHECK(h.finish() == sha);
  // The bytes install into another store as the same expert.
  ExpertStore other(*f.model.checkpoint);
  REQUIRE(other.install({0, 2}, assembled).is_ok());
  CHECK(std::memcmp(other.get({0, 2})->down.data, f.store.get({0, 2})->down.data,
                    f.store.get({0, 2})->n_bytes / 3) == 0);

  // Not held, but on this node's disk (the whole model): served from the file.
  e.body = proto::ExpertWeightsRequest{0, 7, 0, 100};
  const Reply from_disk = f.handler->handle(e, {});
  const auto* first = std::get_if<proto::ExpertWeightsChunk>(&from_disk.envelope.body);
  REQUIRE(first != nullptr);
  CHECK(first->total_bytes == f.store.expert_bytes({0, 7}));
  CHECK(f.model.checkpoint->expert_digests()->check({0, 7}, first->sha256).is_ok());
  e.body = proto::ExpertWeightsRequest{0, 2, 1u << 30, 100};
  CHECK(f.error_of(f.handler->handle(e, {})).message().find("past the expert") !=
        std::string::npos);
}

TEST_CASE("expert request: calls arriving together are computed together, each answered alone") {
  HandlerFixture f;
  const int64_t hidden = f.model.config().hidden_size;
  // Three peers' calls of layer 0 (one bf16), one bad call and a bad message among them.
  std::vector<proto::ExpertCall> calls;
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 3; ++i) {
    proto::ExpertCall c = f.good_call(i == 2 ? DType::kBF16 : DType::kF32);
    c.call_id = 100 + static_cast<uint64_t>(i);
    if (i == 1) c.assignments = {{0, 0, 1.0f}, {1, 2, 0.5f}, {2, 3, 0.5f}, {2, 1, 0.25f}};
    const std::vector<float> x =
        test_support::random_hidden(3, hidden, 20 + static_cast<uint64_t>(i));
    std::vector<uint8_t> payload;
    encode_rows(x.data(), 3, hidden, c.dtype, &payload);
    calls.push_back(std::move(c));
    payloads.push_back(std::move(payload));
  }
  std::vector<Result<proto::Envelope>> envelopes;
  for (const auto& c : calls) envelopes.emplace_back(f.call_envelope(c));
  proto::ExpertCall bad = f.good_call(DType::kF32);
  bad.layer = 99;
  envelopes.emplace_back(f.call_envelope(bad));
  envelopes.emplace_back(invalid_argument("undecodable"));
  std::vector<ExpertRequestHandler::Inbound> in;
  for (size_t i = 0; i < envelopes.size(); ++i) {
    in.push_back({&envelopes[i], i < 3 ? std::span<const uint8_t>(payloads[i])
                                       : std::span<const uint8_t>(payloads[0])});
  }
  std::vector<Reply> together;
  f.handler->handle_many(in, &together);
  REQUIRE(together.size() == 5);
  CHECK(f.counters.calls.load() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const auto* result = std::get_if<proto::ExpertResult>(&together[i].envelope.body);
    REQUIRE(result != nullptr);
    CHECK(result->call_id == 100 + i);
    const Reply alone = f.handler->handle(envelopes[i], payloads[i]);
    REQUIRE(alone.payload.size() == together[i].payload.size());
    // The same rows (up to the rounding of a kernel that saw more tokens).
    std::vector<float> a(static_cast<size_t>(3 * hidden)), b(a.size());
    REQUIRE(decode_rows(alone.payload, calls[i].dtype, 3 * hidden, a.data()).is_ok());
    REQUIRE(decode_rows(together[i].payload, calls[i].dtype, 3 * hidden, b.data()).is_ok());
    CHECK(dancemoe::testing::max_abs_diff(a, b) <= 1e-5f);
  }
  CHECK(f.error_of(together[3]).message().find("layer 99") != std::string::npos);
  CHECK(std::holds_alternative<proto::Error>(together[4].envelope.body));
}

TEST_CASE("expert request: weights neither held nor on disk (a partial checkpoint) are not_found") {
  HandlerFixture f;
  dancemoe::testing::TempDir dir("handler-split");
  REQUIRE(write_split(*f.model.checkpoint, dir.path() / "split").is_ok());
  std::filesystem::remove(dir.path() / "split" / "experts" / ExpertFiles::file_name({0, 7}));
  auto split = Checkpoint::open(dir.path() / "split");
  REQUIRE(split.is_ok());
  ExpertStore store(**split);
  ExpertBlobCache blobs(store);
  CHECK(blobs.get({0, 6}).is_ok());  // on disk, not resident: read from its file
  const auto missing = blobs.get({0, 7});
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("neither resident nor on disk") != std::string::npos);
}

}  // namespace dancemoe::node
