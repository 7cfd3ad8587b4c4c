#include "edge_node/migration/expert_fetcher.h"

#include <algorithm>

#include "common/base/sha256.h"
#include "common/net/zmq_transport.h"

namespace dancemoe::node {

Result<std::vector<uint8_t>> ExpertFetcher::fetch(ExpertRef key, uint64_t expected_bytes,
                                                  const std::vector<PeerInfo>& sources,
                                                  const Digest* expected_digest,
                                                  FetchStats* stats_out) {
  FetchStats stats;
  Partial partial;
  partial.bytes.reserve(expected_bytes);
  std::string tried;
  for (const PeerInfo& source : sources) {
    ++stats.sources_tried;
    const uint64_t kept = partial.bytes.size();
    Status s = fetch_from(key, expected_bytes, source, expected_digest, partial, stats);
    if (s.is_ok()) {
      Sha256 hasher;
      hasher.update(partial.bytes);
      const Digest got = hasher.finish();
      if (got == partial.sha && (expected_digest == nullptr || got == *expected_digest)) {
        stats.source = source.node_id;
        stats.bytes_resumed = std::min<uint64_t>(kept, expected_bytes);
        if (stats_out) *stats_out = stats;
        return std::move(partial.bytes);
      }
      s = invalid_argument("SHA-256 " + to_hex(got) + " of the " +
                           std::to_string(partial.bytes.size()) + " fetched bytes is not " +
                           (expected_digest ? "the model's " + to_hex(*expected_digest)
                                            : "the peer's " + to_hex(partial.sha)) +
                           (kept > 0 ? " (resumed after " + std::to_string(kept) + " bytes)" : ""));
      partial = Partial{};  // which chunk was bad is unknown: start over
    }
    sockets_.erase(source.node_id + " " + source.expert_endpoint);
    tried += (tried.empty() ? "" : "; ") + source.node_id + ": " + s.message();
  }
  if (stats_out) *stats_out = stats;
  return unavailable("expert " + std::to_string(key.expert) + " of layer " +
                     std::to_string(key.layer) + " could not be fetched from any peer" +
                     (tried.empty() ? std::string(" (no peer holds it)") : " (" + tried + ")"));
}

Result<zmq::socket_t*> ExpertFetcher::socket_for(const PeerInfo& source) {
  const std::string id = source.node_id + " " + source.expert_endpoint;
  if (auto it = sockets_.find(id); it != sockets_.end()) return &it->second;
  net::SocketOptions socket_options;
  socket_options.max_message_bytes = static_cast<int64_t>(options_.chunk_bytes) + (1 << 20);
  socket_options.send_timeout = options_.chunk_timeout;
  if (options_.members) {
    DMOE_ASSIGN_OR_RETURN(socket_options.curve, options_.members->client_options(source.node_id));
  }
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t socket,
                        net::make_socket(context_, zmq::socket_type::dealer, socket_options));
  DMOE_RETURN_IF_ERROR(net::connect(socket, source.expert_endpoint));
  return &sockets_.emplace(id, std::move(socket)).first->second;
}

Status ExpertFetcher::fetch_from(ExpertRef key, uint64_t expected_bytes, const PeerInfo& source,
                                 const Digest* expected_digest, Partial& partial,
                                 FetchStats& stats) {
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t * socket, socket_for(source));
  bool first = true;
  while (partial.bytes.size() < expected_bytes || (expected_bytes == 0 && first)) {
    proto::Envelope request;
    request.cluster_id = options_.cluster_id;
    request.sender = options_.node_id;
    request.sequence = ++sequence_;
    request.body = proto::ExpertWeightsRequest{static_cast<uint16_t>(key.layer),
                                               static_cast<uint16_t>(key.expert),
                                               partial.bytes.size(), options_.chunk_bytes};
    DMOE_RETURN_IF_ERROR(net::send_message(*socket, request));
    const auto deadline = std::chrono::steady_clock::now() + options_.chunk_timeout;
    std::optional<net::ReceivedMessage> reply;
    while (!reply) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return deadline_exceeded("no chunk within " +
                                 std::to_string(options_.chunk_timeout.count()) + " ms at byte " +
                                 std::to_string(partial.bytes.size()));
      }
      reply = net::receive_message(*socket, left, /*router=*/false);
    }
    if (!reply->envelope.is_ok()) return reply->envelope.status();
    const proto::Envelope& e = *reply->envelope;
    if (const auto* err = std::get_if<proto::Error>(&e.body)) {
      return Status(err->code, err->message);
    }
    const auto* chunk = std::get_if<proto::ExpertWeightsChunk>(&e.body);
    if (chunk == nullptr) {
      return invalid_argument("expected ExpertWeightsChunk, got " +
                              std::string(proto::body_name(e.body)));
    }
    if (chunk->layer != key.layer || chunk->expert != key.expert) {
      return invalid_argument("chunk of expert [" + std::to_string(chunk->layer) + ", " +
                              std::to_string(chunk->expert) + "] for a request of [" +
                              std::to_string(key.layer) + ", " + std::to_string(key.expert) + "]");
    }
    if (chunk->total_bytes != expected_bytes) {
      return invalid_argument("peer says the expert has " + std::to_string(chunk->total_bytes) +
                              " bytes, the local tensor index says " +
                              std::to_string(expected_bytes));
    }
    if (chunk->offset != partial.bytes.size() || chunk->length > options_.chunk_bytes ||
        chunk->length != reply->payload.size() ||
        (chunk->length == 0 && partial.bytes.size() < expected_bytes)) {
      return invalid_argument("chunk [" + std::to_string(chunk->offset) + ", +" +
                              std::to_string(chunk->length) + ") with " +
                              std::to_string(reply->payload.size()) +
                              " payload bytes does not answer a request at offset " +
                              std::to_string(partial.bytes.size()));
    }
    if (expected_digest != nullptr && chunk->sha256 != *expected_digest) {
      return invalid_argument("the peer's weights have SHA-256 " + to_hex(chunk->sha256) +
                              ", the model's are " + to_hex(*expected_digest));
    }
    if (partial.have_sha && chunk->sha256 != partial.sha) {
      if (!first || expected_digest != nullptr) {
        return invalid_argument("the expert's SHA-256 changed between chunks");
      }
      partial.bytes.clear();  // another source's other bytes: nothing to resume
      partial.have_sha = false;
      continue;
    }
    partial.sha = chunk->sha256;
    partial.have_sha = true;
    first = false;
    partial.bytes.insert(partial.bytes.end(), reply->payload.begin(), reply->payload.end());
    stats.bytes_received += reply->payload.size();
    if (chunk_hook_) chunk_hook_(reply->payload.size());
  }
  return Status::ok();
}

}  // namespace dancemoe::node
