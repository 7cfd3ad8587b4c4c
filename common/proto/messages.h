// The wire protocol's messages as plain C++ values (schemas/dancemoe.fbs is
// the source of truth; field comments live there). Only common/proto/
// touches FlatBuffers; everything else speaks these types. A Message is one
// ZeroMQ multipart message: the envelope plus, for tensors and weight
// chunks, the raw payload frame.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "common/base/status.h"
#include "common/model/expert_ref.h"
#include "common/placement/cluster_placement.h"
#include "common/tensor/dtype.h"

namespace dancemoe::proto {

inline constexpr uint16_t kProtocolMajor = 1;
// 1.1: devices' kind and compute in reports; 1.2: Members, Heartbeat's
// members version, Register's migration headroom (docs/security.md); 1.3:
// co-activation pairs in reports; 1.4: Register's expert type and held
// expert sizes (docs/quantization.md); 1.5: Register's expert files and role
// (docs/partial-checkpoints.md).
inline constexpr uint16_t kProtocolMinor = 5;

// Layer and expert travel as uint16 (see ExpertRef); the codec checks the range.
struct ExpertCount {
  int32_t layer = 0;
  int32_t expert = 0;
  uint32_t count = 0;
  friend bool operator==(const ExpertCount&, const ExpertCount&) = default;
};

// Co-activation of experts a < b of one layer (coactivation.h).
struct ExpertPair {
  int32_t layer = 0;
  int32_t a = 0;
  int32_t b = 0;
  uint32_t count = 0;
  friend bool operator==(const ExpertPair&, const ExpertPair&) = default;
};

struct Assignment {
  uint32_t token = 0;
  uint16_t expert = 0;
  float weight = 0.0f;
  friend bool operator==(const Assignment&, const Assignment&) = default;
};

struct DeviceInfo {
  std::string name;
  uint64_t expert_budget_bytes = 0;
  double load_bytes_per_s = 0.0;
  std::string kind;  // "cpu", "cuda"; empty: unknown
  friend bool operator==(const DeviceInfo&, const DeviceInfo&) = default;
};

struct DeviceCompute {
  std::string device;
  uint64_t pairs = 0;
  double busy_us = 0.0;
  friend bool operator==(const DeviceCompute&, const DeviceCompute&) = default;
};

struct Register {
  std::string node_id;
  std::string model_id;
  std::vector<DeviceInfo> devices;
  uint64_t host_memory_bytes = 0;
  std::string expert_endpoint;
  std::string http_endpoint;
  std::vector<ExpertRef> resident;
  std::vector<uint16_t> resident_devices;
  uint64_t placement_version = 0;
  uint64_t migration_headroom_bytes = 0;
  std::string expert_type;                   // "" from a node before 1.4
  std::vector<uint64_t> expert_layer_bytes;  // per MoE layer, as held
  // false: the node has every expert's files (and nodes before 1.5).
  bool expert_files_partial = false;
  std::vector<ExpertRef> expert_files;  // with expert_files_partial: those it has
  std::string role;                     // "experts" or "" (a full node)
  friend bool operator==(const Register&, const Register&) = default;
};

struct RegisterReply {
  bool accepted = false;
  std::string reason;
  uint32_t heartbeat_interval_ms = 0;
  uint32_t report_interval_ms = 0;
  uint64_t placement_version = 0;
  friend bool operator==(const RegisterReply&, const RegisterReply&) = default;
};

struct Heartbeat {
  uint64_t placement_version = 0;
  uint32_t requests_in_flight = 0;
  uint64_t members_version = 0;
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

struct PeerCallStats {
  std::string peer;
  uint64_t calls = 0;
  double mean_latency_us = 0.0;
  double p99_latency_us = 0.0;
  uint64_t bytes = 0;
  uint64_t failures = 0;
  friend bool operator==(const PeerCallStats&, const PeerCallStats&) = default;
};

struct ActivationReport {
  uint64_t window_start_ms = 0;
  uint64_t window_end_ms = 0;
  uint64_t tokens = 0;
  uint64_t requests = 0;
  std::vector<ExpertCount> counts;
  uint64_t local_calls = 0;
  double local_mean_latency_us = 0.0;
  double local_p99_latency_us = 0.0;
  std::vector<PeerCallStats> remote;
  uint64_t placement_version = 0;
  uint64_t local_hits = 0;
  std::vector<DeviceCompute> devices;
  std::vector<ExpertPair> pairs;
  friend bool operator==(const ActivationReport&, const ActivationReport&) = default;
};

struct Ack {
  uint64_t sequence = 0;
  friend bool operator==(const Ack&, const Ack&) = default;
};

// The message carries exactly a placement (common/placement/cluster_placement.h).
using PlacementPrepare = ClusterPlacement;

struct Ready {
  uint64_t version = 0;
  friend bool operator==(const Ready&, const Ready&) = default;
};

struct Commit {
  uint64_t version = 0;
  friend bool operator==(const Commit&, const Commit&) = default;
};

struct Abort {
  uint64_t version = 0;
  std::string reason;
  friend bool operator==(const Abort&, const Abort&) = default;
};

struct StatusRequest {
  std::string what;
  std::string arguments_json;
  friend bool operator==(const StatusRequest&, const StatusRequest&) = default;
};

struct StatusReply {
  std::string json;
  friend bool operator==(const StatusReply&, const StatusReply&) = default;
};

// Payload: hidden states [n_tokens, hidden] in dtype.
struct ExpertCall {
  uint64_t call_id = 0;
  uint16_t layer = 0;
  uint32_t n_tokens = 0;
  uint32_t hidden = 0;
  DType dtype = DType::kBF16;
  std::vector<Assignment> assignments;
  uint64_t placement_version = 0;
  friend bool operator==(const ExpertCall&, const ExpertCall&) = default;
};

// Payload: [n_tokens, hidden] in dtype.
struct ExpertResult {
  uint64_t call_id = 0;
  uint32_t n_tokens = 0;
  uint32_t hidden = 0;
  DType dtype = DType::kBF16;
  uint32_t compute_us = 0;
  friend bool operator==(const ExpertResult&, const ExpertResult&) = default;
};

struct ExpertWeightsRequest {
  uint16_t layer = 0;
  uint16_t expert = 0;
  uint64_t offset = 0;
  uint32_t max_bytes = 0;
  friend bool operator==(const ExpertWeightsRequest&, const ExpertWeightsRequest&) = default;
};

// Payload: `length` bytes at `offset` of the expert's weights.
struct ExpertWeightsChunk {
  uint16_t layer = 0;
  uint16_t expert = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint64_t total_bytes = 0;
  std::array<uint8_t, 32> sha256{};
  friend bool operator==(const ExpertWeightsChunk&, const ExpertWeightsChunk&) = default;
};

struct Error {
  StatusCode code = StatusCode::kInternal;
  std::string message;
  uint64_t in_reply_to = 0;
  friend bool operator==(const Error&, const Error&) = default;
};

// One admitted node key (docs/security.md); node_id is empty until a node
// registers with it.
struct MemberKey {
  std::string node_id;
  std::string key_name;
  std::string public_key;  // Z85
  friend bool operator==(const MemberKey&, const MemberKey&) = default;
};

struct Members {
  uint64_t version = 0;
  std::vector<MemberKey> members;
  friend bool operator==(const Members&, const Members&) = default;
};

using Body =
    std::variant<Register, RegisterReply, Heartbeat, ActivationReport, Ack, PlacementPrepare, Ready,
                 Commit, Abort, StatusRequest, StatusReply, ExpertCall, ExpertResult,
                 ExpertWeightsRequest, ExpertWeightsChunk, Error, Members>;

// "Register", "ExpertCall", ... for logs and error messages.
std::string_view body_name(const Body& body);

struct Envelope {
  uint16_t protocol_major = kProtocolMajor;
  uint16_t protocol_minor = kProtocolMinor;
  std::string cluster_id;
  std::string sender;
  uint64_t sequence = 0;
  Body body;
  friend bool operator==(const Envelope&, const Envelope&) = default;
};

struct Message {
  Envelope envelope;
  std::vector<uint8_t> payload;  // empty when the body carries no raw frame
};

}  // namespace dancemoe::proto
