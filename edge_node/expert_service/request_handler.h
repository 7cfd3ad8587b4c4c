// ExpertRequestHandler: the expert service's answer to one inbound message,
// sockets aside -- so the fuzz target and unit tests drive exactly the code
// the service runs.
//
//   ExpertCall           -> ExpertResult: per token, the gate-weighted sum of
//                           the named experts' outputs (ExpertComputer), in
//                           the call's dtype
//   ExpertWeightsRequest -> ExpertWeightsChunk (bytes of a resident expert)
//   anything else, or a message that fails a check -> Error
//
// Checks, in addition to the decoder's (common/proto/codec.h): cluster id,
// layer in range and a MoE layer, every expert in range and resident here,
// hidden == the model's, n_tokens <= the configured maximum, dtype f32 or
// bf16, payload bytes == n_tokens x hidden x dtype size. A failed check is
// an Error naming the field and the value, never a crash.
//
// Several messages that arrived together (handle_many): the ExpertCalls of
// one layer -- from several peers, or several sequences' steps -- are
// computed together, each expert once over every token routed to it, and
// answered each with its own rows; the result per token is what handle()
// gives (its experts summed in ascending id).
//
// Not thread-safe: one handler per service worker (it owns an
// ExpertComputer and scratch). The store and blob cache are shared.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/inference/expert_compute.h"
#include "common/inference/expert_store.h"
#include "common/model/model_config.h"
#include "common/proto/messages.h"
#include "edge_node/expert_service/expert_blob_cache.h"

namespace dancemoe::node {

struct ServiceLimits {
  uint32_t max_call_tokens = 4096;      // tokens per ExpertCall
  uint32_t max_chunk_bytes = 4u << 20;  // bytes per ExpertWeightsChunk
};

struct ServiceIdentity {
  std::string node_id;
  std::string cluster_id;  // empty: accept any
};

// Counters shared by every worker of one service (relaxed atomics).
struct ServiceCounters {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> call_tokens{0};
  std::atomic<uint64_t> chunks{0};
  std::atomic<uint64_t> errors{0};        // Error replies of any kind
  std::atomic<uint64_t> bad_messages{0};  // undecodable or failing a check
  std::atomic<uint64_t> refused{0};       // from a key that is not a current member (no answer)
};

struct Reply {
  proto::Envelope envelope;
  std::vector<uint8_t> payload;
};

class ExpertRequestHandler {
 public:
  ExpertRequestHandler(const ModelConfig& config, const ExpertStore& store, ExpertBlobCache& blobs,
                       ExpertComputer& computer, ServiceIdentity identity, ServiceLimits limits,
                       ServiceCounters& counters);

  // `envelope` as receive_message() returns it (possibly an error).
  Reply handle(const Result<proto::Envelope>& envelope, std::span<const uint8_t> payload);

  struct Inbound {
    const Result<proto::Envelope>* envelope = nullptr;
    std::span<const uint8_t> payload;
  };
  // (*replies)[i] answers messages[i]; see above.
  void handle_many(std::span<const Inbound> messages, std::vector<Reply>* replies);

 private:
  // An Error reply for a call that fails a check; nullopt when it passes.
  std::optional<Reply> check_call(const proto::Envelope& in, const proto::ExpertCall& call,
                                  std::span<const uint8_t> payload);
  // Computes calls of one layer that passed check_call, together.
  void compute_calls(std::span<const Inbound> messages, std::span<const size_t> members,
                     std::vector<Reply>* replies);
  Reply weights_chunk(const proto::Envelope& in, const proto::ExpertWeightsRequest& request);
  Reply error(const Status& status, uint64_t in_reply_to);
  proto::Envelope envelope(proto::Body body);

  const ModelConfig& config_;
  const ExpertStore& store_;
  ExpertBlobCache& blobs_;
  ExpertComputer& computer_;
  ServiceIdentity identity_;
  ServiceLimits limits_;
  ServiceCounters& counters_;
  uint64_t sequence_ = 0;
  std::vector<float> x_;    // [n_tokens, hidden]
  std::vector<float> out_;  // [n_tokens, hidden]
  std::vector<ExpertJob> by_expert_;
  std::vector<ExpertJob> jobs_;
  std::vector<std::shared_ptr<const ExpertWeights>> pinned_;  // [n_experts] of the layer
  std::vector<size_t> members_;
  std::vector<int64_t> offsets_;
};

}  // namespace dancemoe::node
