#include "edge_node/migration/expert_fetcher.h"

#include <algorithm>

#include "common/base/sha256.h"
#include "common/net/zmq_transport.h"

namespace dancemoe::node {

Result<std::vector<uint8_t>> ExpertFetcher::fetch(ExpertRef key, uint64_t expected_bytes,
                                                  const std::vector<PeerInfo>& sources,
                                                  const Digest* manifest_digest) {
  std::string tried;
  for (const PeerInfo& source : sources) {
    Result<std::vector<uint8_t>> bytes = fetch_from(key, expected_bytes, source, manifest_digest);
    if (bytes.is_ok()) return bytes;
    tried += (tried.empty() ? "" : "; ") + source.node_id + ": " + bytes.status().message();
  }
  return unavailable("expert " + std::to_string(key.expert) + " of layer " +
                     std::to_string(key.layer) + " could not be fetched from any peer" +
                     (tried.empty() ? std::string(" (no peer holds it)") : " (" + tried + ")"));
}

Result<std::vector<uint8_t>> ExpertFetcher::fetch_from(ExpertRef key, uint64_t expected_bytes,
                                                       const PeerInfo& source,
                                                       const Digest* manifest_digest) {
  net::SocketOptions socket_options;
  socket_options.max_message_bytes = static_cast<int64_t>(options_.chunk_bytes) + (1 << 20);
  socket_options.send_timeout = options_.chunk_timeout;
  if (options_.members) {
    DMOE_ASSIGN_OR_RETURN(socket_options.curve, options_.members->client_options(source.node_id));
  }
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t socket,
                        net::make_socket(context_, zmq::socket_type::dealer, socket_options));
  DMOE_RETURN_IF_ERROR(net::connect(socket, source.expert_endpoint));
  std::vector<uint8_t> bytes;
  bytes.reserve(expected_bytes);
  std::array<uint8_t, 32> sha{};
  bool have_sha = false;
  while (bytes.size() < expected_bytes || (expected_bytes == 0 && !have_sha)) {
    proto::Envelope request;
    request.cluster_id = options_.cluster_id;
    request.sender = options_.node_id;
    request.sequence = ++sequence_;
    request.body = proto::ExpertWeightsRequest{static_cast<uint16_t>(key.layer),
                                               static_cast<uint16_t>(key.expert), bytes.size(),
                                               options_.chunk_bytes};
    DMOE_RETURN_IF_ERROR(net::send_message(socket, request));
    const auto deadline = std::chrono::steady_clock::now() + options_.chunk_timeout;
    std::optional<net::ReceivedMessage> reply;
    while (!reply) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return deadline_exceeded("no chunk within " +
                                 std::to_string(options_.chunk_timeout.count()) + " ms");
      }
      reply = net::receive_message(socket, left, /*router=*/false);
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
    if (chunk->offset != bytes.size() || chunk->length > options_.chunk_bytes ||
        chunk->length != reply->payload.size() ||
        (chunk->length == 0 && bytes.size() < expected_bytes)) {
      return invalid_argument(
          "chunk [" + std::to_string(chunk->offset) + ", +" + std::to_string(chunk->length) +
          ") with " + std::to_string(reply->payload.size()) +
          " payload bytes does not answer a request at offset " + std::to_string(bytes.size()));
    }
    if (have_sha && chunk->sha256 != sha) {
      return invalid_argument("the expert's SHA-256 changed between chunks");
    }
    sha = chunk->sha256;
    have_sha = true;
    bytes.insert(bytes.end(), reply->payload.begin(), reply->payload.end());
  }
  Sha256 hasher;
  hasher.update(bytes);
  const Digest got = hasher.finish();
  if (got != sha) {
    return invalid_argument("SHA-256 of the " + std::to_string(bytes.size()) +
                            " fetched bytes does not match the peer's " + to_hex(sha));
  }
  if (manifest_digest != nullptr && got != *manifest_digest) {
    return invalid_argument("SHA-256 " + to_hex(got) + " of the fetched weights is not the " +
                            "model's manifest's " + to_hex(*manifest_digest));
  }
  return bytes;
}

}  // namespace dancemoe::node
