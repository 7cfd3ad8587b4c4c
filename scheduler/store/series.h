// SeriesReader: the dashboard's read-only queries over the scheduler's
// SQLite file (issue 19) -- what happened over time, where `dancemoe status`
// says what is true now:
//
//   per node   activations, local hits (the local-hit ratio), tokens,
//              requests, remote calls and remote-call bytes per time bucket
//   per peer   remote calls to it and their summed latency per bucket
//              (calls-weighted over every caller), so the mean is sum/calls
//   migrations bytes loaded by committed migrations, in the bucket they ended
//   placements every version committed in the range (the chart's markers)
//   heat       activation counts per node and expert since a time
//
// A raw report counts in the bucket of its received time; a roll-up bucket
// (reports older than the raw retention, retention.h) in the bucket of its
// start, so a step finer than the roll-up bucket shows roll-ups as spikes
// every bucket length -- the data has no finer grain.
//
// Its own read-only connection to the file: WAL lets it read the last
// committed state while the service loop writes, so dashboard queries never
// wait for a report's transaction nor delay one. Not thread-safe (one
// connection): callers serialise.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/store/sqlite.h"
#include "scheduler/store/store.h"

namespace dancemoe::store {

// Buckets [from_ms + i * step_ms, from_ms + (i + 1) * step_ms), i < n_buckets.
struct SeriesRange {
  int64_t from_ms = 0;
  int64_t step_ms = 60'000;
  int32_t n_buckets = 60;
  int64_t end_ms() const { return from_ms + step_ms * n_buckets; }
};

struct NodeSeries {  // one value per bucket
  std::vector<uint64_t> activations, local_hits, tokens, requests, remote_calls, remote_bytes;
};

struct PeerSeries {  // one value per bucket
  std::vector<uint64_t> calls;
  std::vector<double> latency_sum_us;  // sum over calls of their mean latency
};

struct PlacementMark {
  uint64_t version = 0;
  int64_t committed_ms = 0;
  std::string policy;
  std::string trigger;
};

struct ClusterSeries {
  SeriesRange range;
  std::map<std::string, NodeSeries> nodes;
  std::map<std::string, PeerSeries> peers;  // by the called peer's node id
  std::vector<uint64_t> migration_bytes;    // one value per bucket
  std::vector<PlacementMark> placements;    // committed in the range, oldest first
};

class SeriesReader {
 public:
  // Opens `path` read-only; the store must have created it (a schema other
  // than this build's is refused).
  static Result<std::unique_ptr<SeriesReader>> open(const std::string& path);

  // n_buckets in 1..10000 and step_ms >= 1, else invalid_argument.
  Result<ClusterSeries> series(const SeriesRange& range);

  // Per node, counts of every expert of `index` since `since_ms`
  // (activation_counts.h).
  Result<std::map<std::string, std::vector<double>>> heat(int64_t since_ms,
                                                          const CountIndex& index);

  // The committed placement's version and commit time; nullopt before the first.
  Result<std::optional<PlacementMark>> committed();

 private:
  explicit SeriesReader(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  Status read_nodes(const SeriesRange& range, ClusterSeries* out);
  Status read_peers(const SeriesRange& range, ClusterSeries* out);
  Status read_migrations(const SeriesRange& range, ClusterSeries* out);
  Status read_placements(const SeriesRange& range, ClusterSeries* out);

  std::unique_ptr<Database> db_;
};

}  // namespace dancemoe::store
