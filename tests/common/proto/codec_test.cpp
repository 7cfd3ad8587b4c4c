#include "common/proto/codec.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

namespace dancemoe::proto {
namespace {

Envelope wrap(Body body) {
  Envelope e;
  e.cluster_id = "lab";
  e.sender = "node-a";
  e.sequence = 42;
  e.body = std::move(body);
  return e;
}

std::vector<Body> one_of_each() {
  Register reg;
  reg.node_id = "node-a";
  reg.model_id = "0123456789abcdef0123456789abcdef";
  reg.devices = {{"cpu", 8'000'000'000ull, 2.5e9, "cpu"},
                 {"cuda:0", 16'000'000'000ull, 1.2e10, "cuda"}};
  reg.host_memory_bytes = 64ull << 30;
  reg.expert_endpoint = "tcp://10.0.0.2:5551";
  reg.http_endpoint = "http://127.0.0.1:8080";
  reg.resident = {{0, 1}, {3, 7}};
  reg.resident_devices = {0, 1};
  reg.placement_version = 9;
  reg.migration_headroom_bytes = 4'000'000'000ull;
  reg.expert_type = "q4_K";
  reg.expert_layer_bytes = {1'327'104, 1'327'104, 1'900'544};
  reg.expert_files_partial = true;
  reg.expert_files = {{0, 1}, {3, 7}};
  reg.role = "experts";

  ActivationReport report;
  report.window_start_ms = 1000;
  report.window_end_ms = 11000;
  report.tokens = 512;
  report.requests = 3;
  report.counts = {{0, 5, 17}, {15, 63, 2}};
  report.local_calls = 100;
  report.local_mean_latency_us = 120.5;
  report.local_p99_latency_us = 300;
  report.remote = {{"node-b", 40, 900.0, 2000.0, 1 << 20, 1}};
  report.placement_version = 9;
  report.local_hits = 300;
  report.pairs = {{0, 5, 9, 12}, {15, 1, 63, 3}};

  PlacementPrepare prepare;
  prepare.version = 10;
  prepare.nodes = {{"node-a", "tcp://a:5551", {{"cpu", {{0, 1}, {0, 2}}}}},
                   {"node-b", "tcp://b:5551", {{"gpu0", {{1, 3}}}, {"gpu1", {}}}}};

  ExpertCall call;
  call.call_id = 77;
  call.layer = 3;
  call.n_tokens = 2;
  call.hidden = 1024;
  call.dtype = DType::kBF16;
  call.assignments = {{0, 5, 0.25f}, {1, 5, 0.5f}, {1, 6, 0.125f}};
  call.placement_version = 10;

  ExpertWeightsChunk chunk;
  chunk.layer = 2;
  chunk.expert = 9;
  chunk.offset = 4096;
  chunk.length = 1000;
  chunk.total_bytes = 3 << 20;
  for (size_t i = 0; i < 32; ++i) chunk.sha256[i] = static_cast<uint8_t>(i * 7);

  return {reg,
          RegisterReply{false, "model id a != b", 1000, 10000, 4},
          Heartbeat{9, 2, 0xfeedULL},
          report,
          Ack{41},
          prepare,
          Ready{10},
          Commit{10},
          Abort{10, "node-b timed out"},
          StatusRequest{"placement", R"({"layer": 3})"},
          StatusReply{R"({"version": 10})"},
          call,
          ExpertResult{77, 2, 1024, DType::kF32, 350},
          ExpertWeightsRequest{2, 9, 4096, 1 << 20},
          chunk,
          Error{StatusCode::kInvalidArgument, "layer 99 out of range", 41},
          Members{0x1234,
                  {{"node-a", "ws1", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"},
                   {"", "ws2", "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"}}}};
}

std::vector<uint8_t> encoded_call(ExpertCall call) { return encode(wrap(std::move(call))); }

ExpertCall valid_call() { return std::get<ExpertCall>(one_of_each()[11]); }

}  // namespace

TEST_CASE("proto: every message survives an encode/decode round trip") {
  for (const Body& body : one_of_each()) {
    CAPTURE(body_name(body));
    const Envelope sent = wrap(body);
    auto received = decode(encode(sent));
    REQUIRE(received.is_ok());
    CHECK(*received == sent);
  }
}

TEST_CASE("proto: a different major version is refused naming both versions") {
  Envelope e = wrap(Heartbeat{});
  e.protocol_major = 2;
  e.protocol_minor = 3;
  auto r = decode(encode(e));
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kVersionMismatch);
  CHECK(r.status().message() ==
        "peer speaks protocol 2.3, this build speaks 1." + std::to_string(kProtocolMinor));
  e.protocol_major = kProtocolMajor;
  e.protocol_minor = 9;  // a newer minor is compatible
  CHECK(decode(encode(e)).is_ok());
}

TEST_CASE("proto: truncated, oversized and garbage buffers are rejected, never trusted") {
  const Envelope sent = wrap(one_of_each()[3]);
  const std::vector<uint8_t> good = encode(sent);
  int rejected = 0;
  for (size_t cut = 0; cut < good.size(); ++cut) {
    auto r = decode(std::span(good).first(cut));
    // Cutting only trailing alignment padding may leave a valid buffer; it
    // must then decode to exactly what was sent.
    if (r.is_ok()) {
      CHECK(*r == sent);
    } else {
      ++rejected;
    }
  }
  CHECK(rejected >= static_cast<int>(good.size()) - 8);
  std::vector<uint8_t> garbage(300);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 31 + 7);
  CHECK_FALSE(decode(garbage).is_ok());
  DecodeLimits small;
  small.max_envelope_bytes = 64;
  auto r = decode(good, small);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("exceeds the limit of 64") != std::string::npos);
}

TEST_CASE("proto: out-of-range fields name the field") {
  ExpertCall call = valid_call();
  call.assignments.push_back({5, 1, 1.0f});
  CHECK(decode(encoded_call(call)).status().message() ==
        "ExpertCall assignment names token 5 of a call with 2 tokens");
  call = valid_call();
  call.n_tokens = 0;
  CHECK(decode(encoded_call(call)).status().message().find("ExpertCall.n_tokens must be in") == 0);
  call = valid_call();
  call.hidden = 1 << 20;
  CHECK(decode(encoded_call(call)).status().message().find("ExpertCall.hidden must be in") == 0);
  call = valid_call();
  call.assignments[0].weight = std::numeric_limits<float>::quiet_NaN();
  CHECK(decode(encoded_call(call)).status().message() ==
        "ExpertCall assignment weight is not finite");
  call = valid_call();
  call.assignments.clear();
  CHECK(decode(encoded_call(call)).status().message() == "ExpertCall has no assignments");

  ActivationReport report = std::get<ActivationReport>(one_of_each()[3]);
  report.local_mean_latency_us = -1;
  CHECK(decode(encode(wrap(report))).status().message().find("local_mean_latency_us") !=
        std::string::npos);
  report = std::get<ActivationReport>(one_of_each()[3]);
  report.window_end_ms = 10;
  CHECK_FALSE(decode(encode(wrap(report))).is_ok());

  ExpertWeightsChunk chunk = std::get<ExpertWeightsChunk>(one_of_each()[14]);
  chunk.offset = chunk.total_bytes;
  chunk.length = 1;
  CHECK(decode(encode(wrap(chunk))).status().message().find("runs past") != std::string::npos);

  Members members = std::get<Members>(one_of_each()[16]);
  members.members[1].public_key = "not a key";
  CHECK(decode(encode(wrap(members))).status().message() ==
        "Members.members.public_key of 'ws2': expected 40 Z85 characters");

  Register reg = std::get<Register>(one_of_each()[0]);
  reg.node_id = std::string(5000, 'x');
  CHECK(decode(encode(wrap(reg))).status().message() ==
        "Register.node_id: 5000 bytes exceeds the limit of 4096");
  Register role = std::get<Register>(one_of_each()[0]);
  role.role = "dense";
  CHECK(decode(encode(wrap(role))).status().message() ==
        "Register.role: expected \"experts\" or empty, got \"dense\"");
  Register files = std::get<Register>(one_of_each()[0]);
  files.expert_files_partial = false;
  CHECK(decode(encode(wrap(files))).status().message().find("expert_files_partial is false") !=
        std::string::npos);
}

// Regressions found by the envelope fuzz target.
TEST_CASE("proto: a body type without a body and strings with NUL bytes are handled") {
  Envelope e = wrap(Error{StatusCode::kInternal, std::string("a\0b", 3), 1});
  auto r = decode(encode(e));
  REQUIRE(r.is_ok());
  CHECK(std::get<Error>(r->body).message.size() == 3);
}

TEST_CASE("proto: peek_sequence names a verifiable envelope even when a field is refused") {
  ActivationReport report;
  report.local_mean_latency_us = -1.0;  // refused by decode
  Envelope e = wrap(report);
  e.sequence = 12345;
  const std::vector<uint8_t> bytes = encode(e);
  CHECK_FALSE(decode(bytes).is_ok());
  CHECK(peek_sequence(bytes) == 12345u);
  CHECK_FALSE(peek_sequence(std::span<const uint8_t>(bytes.data(), bytes.size() / 2)).has_value());
  DecodeLimits tiny;
  tiny.max_envelope_bytes = 16;
  CHECK_FALSE(peek_sequence(bytes, tiny).has_value());
}

TEST_CASE("proto: tensor frames must match their description exactly") {
  CHECK(check_tensor_payload(DType::kBF16, 2, 1024, 4096, "ExpertCall").is_ok());
  Status s = check_tensor_payload(DType::kBF16, 2, 1024, 4095, "ExpertCall");
  CHECK(s.message() == "ExpertCall: tensor frame of 4095 bytes, but 2 x 1024 BF16 needs 4096");
  CHECK_FALSE(check_tensor_payload(DType::kF32, 2, 1024, 4096, "ExpertResult").is_ok());
}

}  // namespace dancemoe::proto
