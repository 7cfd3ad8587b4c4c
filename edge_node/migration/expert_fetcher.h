// ExpertFetcher: one expert's weights fetched from a peer that holds it, for
// a node that lacks the model files (DESIGN.md §5.6), chunk by chunk
// (ExpertWeightsRequest -> ExpertWeightsChunk) over a DEALER of its own.
// Every chunk is checked -- the expert asked for, the offset asked for, a
// length within the request, the total equal to the expert's size from the
// local tensor index, the same SHA-256 in every chunk -- and the assembled
// bytes must hash to that SHA-256. A peer that fails any check, errs or
// times out is abandoned for the next source. With member keys a source
// that is not a current member is not asked, and the link pins its key.
//
// Not thread-safe: one fetch at a time (the migration loader thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/base/status.h"
#include "common/inference/expert_store.h"
#include "common/model/expert_manifest.h"
#include "edge_node/holders/holder_table.h"
#include "edge_node/remote/member_keys.h"

namespace dancemoe::node {

struct FetcherOptions {
  std::string node_id;
  std::string cluster_id;
  uint32_t chunk_bytes = 1u << 20;
  std::chrono::milliseconds chunk_timeout{5000};
  // Pins each source's member key (null: plain sockets, --insecure).
  std::shared_ptr<const MemberKeys> members;
};

class ExpertFetcher {
 public:
  ExpertFetcher(zmq::context_t& context, FetcherOptions options)
      : context_(context), options_(std::move(options)) {}

  // The expert's bytes in the checkpoint layout (ExpertStore::install), from
  // the first of `sources` that delivers them intact -- and, with
  // `manifest_digest` (the model's, expert_manifest.h), hashing to it.
  Result<std::vector<uint8_t>> fetch(ExpertRef key, uint64_t expected_bytes,
                                     const std::vector<PeerInfo>& sources,
                                     const Digest* manifest_digest = nullptr);

 private:
  Result<std::vector<uint8_t>> fetch_from(ExpertRef key, uint64_t expected_bytes,
                                          const PeerInfo& source, const Digest* manifest_digest);

  zmq::context_t& context_;
  FetcherOptions options_;
  uint64_t sequence_ = 0;
};

}  // namespace dancemoe::node
