#include "edge_node/expert_service/request_handler.h"

#include <algorithm>
#include <chrono>

#include "common/proto/codec.h"
#include "edge_node/remote/wire_tensor.h"

namespace dancemoe::node {

ExpertRequestHandler::ExpertRequestHandler(const ModelConfig& config, const ExpertStore& store,
                                           ExpertBlobCache& blobs, ExpertComputer& computer,
                                           ServiceIdentity identity, ServiceLimits limits,
                                           ServiceCounters& counters)
    : config_(config),
      store_(store),
      blobs_(blobs),
      computer_(computer),
      identity_(std::move(identity)),
      limits_(limits),
      counters_(counters) {}

proto::Envelope ExpertRequestHandler::envelope(proto::Body body) {
  proto::Envelope e;
  e.cluster_id = identity_.cluster_id;
  e.sender = identity_.node_id;
  e.sequence = ++sequence_;
  e.body = std::move(body);
  return e;
}

Reply ExpertRequestHandler::error(const Status& status, uint64_t in_reply_to) {
  counters_.errors.fetch_add(1, std::memory_order_relaxed);
  return Reply{envelope(proto::Error{status.code(), status.message(), in_reply_to}), {}};
}

Reply ExpertRequestHandler::handle(const Result<proto::Envelope>& in,
                                   std::span<const uint8_t> payload) {
  const Inbound one{&in, payload};
  std::vector<Reply> replies;
  handle_many(std::span(&one, 1), &replies);
  return std::move(replies[0]);
}

void ExpertRequestHandler::handle_many(std::span<const Inbound> messages,
                                       std::vector<Reply>* replies) {
  replies->clear();
  replies->resize(messages.size());
  std::vector<size_t> calls;  // messages that are ExpertCalls passing their checks
  for (size_t i = 0; i < messages.size(); ++i) {
    const Result<proto::Envelope>& in = *messages[i].envelope;
    Reply& reply = (*replies)[i];
    if (!in.is_ok()) {
      counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
      reply = error(in.status(), 0);
      continue;
    }
    const proto::Envelope& e = *in;
    if (!identity_.cluster_id.empty() && !e.cluster_id.empty() &&
        e.cluster_id != identity_.cluster_id) {
      counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
      reply = error(failed_precondition("cluster id '" + e.cluster_id + "' is not this node's '" +
                                        identity_.cluster_id + "'"),
                    e.sequence);
      continue;
    }
    if (const auto* call = std::get_if<proto::ExpertCall>(&e.body)) {
      if (std::optional<Reply> refused = check_call(e, *call, messages[i].payload)) {
        reply = std::move(*refused);
      } else {
        calls.push_back(i);
      }
      continue;
    }
    if (const auto* request = std::get_if<proto::ExpertWeightsRequest>(&e.body)) {
      reply = weights_chunk(e, *request);
      continue;
    }
    counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
    reply = error(invalid_argument("the expert service answers ExpertCall and "
                                   "ExpertWeightsRequest, not " +
                                   std::string(proto::body_name(e.body))),
                  e.sequence);
  }
  // One computation per layer, in the order the layers first appear.
  std::vector<size_t> group;
  while (!calls.empty()) {
    const uint32_t layer = std::get<proto::ExpertCall>((*messages[calls[0]].envelope)->body).layer;
    group.clear();
    std::vector<size_t> rest;
    for (size_t i : calls) {
      const auto& call = std::get<proto::ExpertCall>((*messages[i].envelope)->body);
      (call.layer == layer ? group : rest).push_back(i);
    }
    compute_calls(messages, group, replies);
    calls.swap(rest);
  }
}

std::optional<Reply> ExpertRequestHandler::check_call(const proto::Envelope& in,
                                                      const proto::ExpertCall& call,
                                                      std::span<const uint8_t> payload) {
  auto refuse = [&](Status status) {
    counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
    return error(status.with_context("ExpertCall " + std::to_string(call.call_id)), in.sequence);
  };
  if (call.layer >= config_.n_layers) {
    return refuse(invalid_argument("layer " + std::to_string(call.layer) + " is out of range [0, " +
                                   std::to_string(config_.n_layers) + ")"));
  }
  if (!config_.layer_is_moe[call.layer]) {
    return refuse(invalid_argument("layer " + std::to_string(call.layer) +
                                   " is a dense layer and has no experts"));
  }
  if (call.hidden != static_cast<uint32_t>(config_.hidden_size)) {
    return refuse(invalid_argument("hidden is " + std::to_string(call.hidden) +
                                   ", the model's hidden size is " +
                                   std::to_string(config_.hidden_size)));
  }
  if (call.n_tokens > limits_.max_call_tokens) {
    return refuse(resource_exhausted("n_tokens " + std::to_string(call.n_tokens) +
                                     " exceeds this node's limit of " +
                                     std::to_string(limits_.max_call_tokens) + " tokens per call"));
  }
  if (call.dtype != DType::kF32 && call.dtype != DType::kBF16) {
    return refuse(invalid_argument("dtype " + std::string(dtype_name(call.dtype)) +
                                   " is not served; send F32 or BF16"));
  }
  if (Status s = proto::check_tensor_payload(call.dtype, call.n_tokens, call.hidden, payload.size(),
                                             "hidden states");
      !s.is_ok()) {
    return refuse(s);
  }
  for (const proto::Assignment& a : call.assignments) {
    if (a.expert >= config_.n_experts) {
      return refuse(invalid_argument("expert " + std::to_string(a.expert) +
                                     " is out of range [0, " + std::to_string(config_.n_experts) +
                                     ")"));
    }
    if (a.token >= call.n_tokens) {
      return refuse(invalid_argument("an assignment names token " + std::to_string(a.token) +
                                     " of " + std::to_string(call.n_tokens)));
    }
  }
  return std::nullopt;
}

void ExpertRequestHandler::compute_calls(std::span<const Inbound> messages,
                                         std::span<const size_t> group,
                                         std::vector<Reply>* replies) {
  const auto& first = std::get<proto::ExpertCall>((*messages[group[0]].envelope)->body);
  const uint32_t layer = first.layer;
  const int64_t hidden = config_.hidden_size;
  pinned_.assign(static_cast<size_t>(config_.n_experts), nullptr);
  // Each call's experts must be resident (pinned for the computation), and
  // its rows go at its offset in x_.
  members_.clear();
  offsets_.clear();
  int64_t total = 0;
  for (size_t i : group) {
    const proto::Envelope& in = **messages[i].envelope;
    const auto& call = std::get<proto::ExpertCall>(in.body);
    int64_t missing = -1;
    for (const proto::Assignment& a : call.assignments) {
      std::shared_ptr<const ExpertWeights>& w = pinned_[a.expert];
      if (w == nullptr)
        w = store_.get({static_cast<int32_t>(layer), static_cast<int32_t>(a.expert)});
      if (w == nullptr) {
        missing = a.expert;
        break;
      }
    }
    if (missing >= 0) {
      counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
      (*replies)[i] = error(
          not_found("expert " + std::to_string(missing) + " of layer " + std::to_string(layer) +
                    " is not held by node '" + identity_.node_id + "'")
              .with_context("ExpertCall " + std::to_string(call.call_id)),
          in.sequence);
      continue;
    }
    const int64_t rows = call.n_tokens;
    x_.resize(static_cast<size_t>((total + rows) * hidden));
    if (Status s =
            decode_rows(messages[i].payload, call.dtype, rows * hidden, x_.data() + total * hidden);
        !s.is_ok()) {
      counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
      (*replies)[i] =
          error(s.with_context("ExpertCall " + std::to_string(call.call_id)), in.sequence);
      continue;
    }
    members_.push_back(i);
    offsets_.push_back(total);
    total += rows;
  }
  // Group by expert, ascending, tokens in the order the callers listed them:
  // the sum per token then runs over experts in ascending id, as on the
  // caller's side (LocalMoeExecutor), so results do not depend on where an
  // expert runs, or with which other calls, beyond float associativity.
  by_expert_.resize(static_cast<size_t>(config_.n_experts));
  for (ExpertJob& job : by_expert_) {
    job.tokens.clear();
    job.weights.clear();
  }
  for (size_t m = 0; m < members_.size(); ++m) {
    const auto& call = std::get<proto::ExpertCall>((*messages[members_[m]].envelope)->body);
    for (const proto::Assignment& a : call.assignments) {
      ExpertJob& job = by_expert_[a.expert];
      job.tokens.push_back(static_cast<int32_t>(offsets_[m] + a.token));
      job.weights.push_back(a.weight);
    }
  }
  size_t n_jobs = 0;
  for (int64_t e = 0; e < config_.n_experts; ++e) {
    ExpertJob& source = by_expert_[static_cast<size_t>(e)];
    if (source.tokens.empty()) continue;
    if (jobs_.size() <= n_jobs) jobs_.emplace_back();
    ExpertJob& job = jobs_[n_jobs++];
    assign_expert(*pinned_[static_cast<size_t>(e)], &job);
    job.tokens.swap(source.tokens);
    job.weights.swap(source.weights);
  }
  const auto start = std::chrono::steady_clock::now();
  out_.assign(static_cast<size_t>(total * hidden), 0.0f);
  if (total > 0) {
    computer_.run(std::span<const ExpertJob>(jobs_.data(), n_jobs), x_.data(), total, hidden,
                  out_.data());
  }
  pinned_.clear();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  for (size_t m = 0; m < members_.size(); ++m) {
    const auto& call = std::get<proto::ExpertCall>((*messages[members_[m]].envelope)->body);
    Reply& reply = (*replies)[members_[m]];
    encode_rows(out_.data() + offsets_[m] * hidden, call.n_tokens, call.hidden, call.dtype,
                &reply.payload);
    proto::ExpertResult result;
    result.call_id = call.call_id;
    result.n_tokens = call.n_tokens;
    result.hidden = call.hidden;
    result.dtype = call.dtype;
    result.compute_us = static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX));
    reply.envelope = envelope(result);
    counters_.calls.fetch_add(1, std::memory_order_relaxed);
    counters_.call_tokens.fetch_add(call.n_tokens, std::memory_order_relaxed);
  }
}

Reply ExpertRequestHandler::weights_chunk(const proto::Envelope& in,
                                          const proto::ExpertWeightsRequest& request) {
  const ExpertRef key{request.layer, request.expert};
  if (Status s = store_.check_key(key); !s.is_ok()) {
    counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
    return error(s.with_context("ExpertWeightsRequest"), in.sequence);
  }
  Result<std::shared_ptr<const ExpertBlob>> blob = blobs_.get(key);
  if (!blob.is_ok()) return error(blob.status().with_context("ExpertWeightsRequest"), in.sequence);
  const std::vector<uint8_t>& bytes = (*blob)->bytes;
  if (request.offset > bytes.size()) {
    counters_.bad_messages.fetch_add(1, std::memory_order_relaxed);
    return error(
        invalid_argument("ExpertWeightsRequest offset " + std::to_string(request.offset) +
                         " is past the expert's " + std::to_string(bytes.size()) + " bytes"),
        in.sequence);
  }
  const uint64_t length = std::min<uint64_t>({static_cast<uint64_t>(request.max_bytes),
                                              static_cast<uint64_t>(limits_.max_chunk_bytes),
                                              bytes.size() - request.offset});
  Reply reply;
  reply.payload.assign(bytes.begin() + static_cast<std::ptrdiff_t>(request.offset),
                       bytes.begin() + static_cast<std::ptrdiff_t>(request.offset + length));
  proto::ExpertWeightsChunk chunk;
  chunk.layer = request.layer;
  chunk.expert = request.expert;
  chunk.offset = request.offset;
  chunk.length = static_cast<uint32_t>(length);
  chunk.total_bytes = bytes.size();
  chunk.sha256 = (*blob)->sha256;
  reply.envelope = envelope(chunk);
  counters_.chunks.fetch_add(1, std::memory_order_relaxed);
  return reply;
}

}  // namespace dancemoe::node
