// ExpertFetcher: one expert's weights fetched from peers that have them, for
// a node that lacks the model files (DESIGN.md §5.6) or gathers an expert
// for a long prompt (weight_gathering.h), chunk by chunk
// (ExpertWeightsRequest -> ExpertWeightsChunk) over a DEALER per peer,
// kept open between fetches. Every chunk is checked -- the expert asked
// for, the offset asked for, a length within the request, the total equal
// to the expert's size from the local tensor index, the same SHA-256 in
// every chunk -- and the assembled bytes must hash to that SHA-256.
//
// With the expected digest (the model's manifest or a split checkpoint's
// index, expert_manifest.h), a source announcing another SHA-256 is skipped
// at its first chunk, and a fetch is resumable: when a source dies or errs
// mid-way, the next source continues from the bytes already received
// (they belong to the same expected bytes; the final hash decides). Bytes
// that hash wrong are all discarded and the expert is fetched again whole
// from the next source. Without it, a source continues another's bytes
// only when it announces the same SHA-256. A peer that fails any check,
// errs or times out is abandoned for the next source (its socket closed, so
// a late reply cannot be taken for the next request's). With member keys a
// source that is not a current member is not asked, and the link pins its
// key.
//
// Not thread-safe: one fetch at a time per fetcher (the migration loader
// thread has one, the forward's executor another).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
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

// What one fetch did, for logs, counters and the throttle.
struct FetchStats {
  std::string source;  // the node that delivered the last byte
  int sources_tried = 0;
  uint64_t bytes_received = 0;  // over the wire, discarded ones included
  uint64_t bytes_resumed = 0;   // kept from an earlier source that failed mid-way
};

class ExpertFetcher {
 public:
  // Called after every chunk with its byte count (a throttle may sleep).
  using ChunkHook = std::function<void(uint64_t bytes)>;

  ExpertFetcher(zmq::context_t& context, FetcherOptions options)
      : context_(context), options_(std::move(options)) {}

  // The expert's bytes in the checkpoint layout (ExpertStore::install), from
  // `sources` in order -- and, with `expected_digest`, hashing to it.
  Result<std::vector<uint8_t>> fetch(ExpertRef key, uint64_t expected_bytes,
                                     const std::vector<PeerInfo>& sources,
                                     const Digest* expected_digest = nullptr,
                                     FetchStats* stats = nullptr);

  void set_chunk_hook(ChunkHook hook) { chunk_hook_ = std::move(hook); }
  // Drops the kept sockets (peers gone, keys changed).
  void close_all() { sockets_.clear(); }

 private:
  struct Partial {
    std::vector<uint8_t> bytes;
    Digest sha{};
    bool have_sha = false;
  };
  // Continues `partial` from `source` until complete or an error.
  Status fetch_from(ExpertRef key, uint64_t expected_bytes, const PeerInfo& source,
                    const Digest* expected_digest, Partial& partial, FetchStats& stats);
  Result<zmq::socket_t*> socket_for(const PeerInfo& source);

  zmq::context_t& context_;
  FetcherOptions options_;
  uint64_t sequence_ = 0;
  ChunkHook chunk_hook_;
  std::map<std::string, zmq::socket_t> sockets_;  // node_id + " " + endpoint
};

}  // namespace dancemoe::node
