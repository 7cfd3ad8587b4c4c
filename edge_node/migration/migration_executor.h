// MigrationExecutor: applies placements on this node without a serving gap
// (DESIGN.md §5.6).
//
//   prepare(v)  checks v against the model, this node's devices and the
//               memory limit, then loads the experts v gives this node and
//               it lacks -- each onto the device v names (an expert v moves
//               between devices of this node is reloaded there) -- in a background
//               thread, throttled (load_throttle.h), from the local model
//               files or -- when they cannot be read, or with
//               source = kPeer -- fetched from a peer holding them or
//               having their files (expert_fetcher.h, SHA-256 checked,
//               resumed on the next peer when one dies mid-way); a split
//               checkpoint keeps what it fetched in its experts/ directory
//               (its local expert store; a full disk is counted, not
//               fatal). Serving goes on with
//               the committed routing table meanwhile. When done it calls
//               on_done(v, status): ok means "ready(v)".
//   commit(v)   switches the routing table to v atomically, then evicts
//               what v dropped (an expert still in use by a running
//               computation stays alive until it is released).
//   abort(v)    stops loading and evicts what was loaded for v only.
//
// A new prepare supersedes one in progress. Commit of the committed version
// is a no-op (a resent Commit); commit of a version not ready is
// failed_precondition. Thread-safe; on_done runs on the loader thread and
// must not block on this executor.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/base/status.h"
#include "common/inference/expert_store.h"
#include "common/model/checkpoint.h"
#include "common/runtime/clock.h"
#include "edge_node/activation/activation_log.h"
#include "edge_node/holders/holder_table.h"
#include "edge_node/migration/expert_fetcher.h"
#include "edge_node/migration/load_throttle.h"

namespace dancemoe::node {

enum class ExpertSource { kLocal, kPeer, kAuto };

struct MigrationOptions {
  std::string node_id;
  // This node's devices in its order ("cpu", "cpu:1", "cuda:0"); a placement
  // names them, and each expert is loaded onto its device.
  std::vector<std::string> devices{"cpu"};
  std::string cluster_id;
  ExpertSource source = ExpertSource::kAuto;
  ThrottleOptions throttle;
  // Resident expert bytes allowed while old and new sets overlap; 0: no limit.
  uint64_t memory_limit_bytes = 0;
  uint32_t chunk_bytes = 1u << 20;
  std::chrono::milliseconds fetch_timeout{5000};
  std::shared_ptr<const MemberKeys> members;  // for fetches (null: plain)
  // Time for the throttle's pauses between expert loads; must outlive the executor.
  const Clock* clock = &system_clock();
};

struct MigrationStatus {
  std::string state = "idle";  // idle, loading, ready, failed
  uint64_t committed_version = 0;
  uint64_t target_version = 0;
  uint64_t bytes_total = 0;
  uint64_t bytes_done = 0;
  uint64_t experts_loaded = 0;   // from local files
  uint64_t experts_fetched = 0;  // from peers
  uint64_t experts_evicted = 0;
  // Fetched experts written to the local expert store (a split
  // checkpoint's experts/), and writes that failed (a full disk).
  uint64_t experts_stored = 0;
  uint64_t store_failures = 0;
  std::string last_error;
  std::string last_store_error;
};

class MigrationExecutor {
 public:
  using DoneCallback = std::function<void(uint64_t version, const Status& status)>;
  // true while a request is being served (throttling applies).
  using ServingProbe = std::function<bool()>;

  MigrationExecutor(const Checkpoint& checkpoint, ExpertStore& store, HolderTableHandle& table,
                    ActivationLog& log, zmq::context_t& context, MigrationOptions options,
                    ServingProbe serving);
  ~MigrationExecutor();
  MigrationExecutor(const MigrationExecutor&) = delete;
  MigrationExecutor& operator=(const MigrationExecutor&) = delete;

  Status prepare(const ClusterPlacement& placement, DoneCallback on_done);
  Status commit(uint64_t version);
  Status abort(uint64_t version, const std::string& reason);
  // prepare + wait + commit, unthrottled: the initial placement at start-up.
  Status apply_now(const ClusterPlacement& placement);

  MigrationStatus status() const;
  uint64_t committed_version() const;
  bool loading() const { return loading_.load(); }
  LoadThrottle& throttle() { return throttle_; }

 private:
  std::chrono::milliseconds steady_now() const {
    return std::chrono::milliseconds(options_.clock->steady_ms());
  }
  enum class State { kIdle, kLoading, kReady, kFailed };
  void cancel_loader();  // joins; mutex_ not held
  // Records that `version` starts loading `bytes` towards `target`.
  void begin_loading(uint64_t version, std::shared_ptr<const HolderTable> target, uint64_t bytes);
  struct Load {
    ExpertRef key;
    int32_t device = 0;
  };
  // What `target` gives this node that is not resident on its device yet.
  std::vector<Load> missing(const HolderTable& target, uint64_t* bytes) const;
  void loader(uint64_t version, std::vector<Load> loads, std::shared_ptr<const HolderTable> target,
              bool throttled, DoneCallback on_done);
  Status load_one(const Load& load, const HolderTable& target, ExpertFetcher& fetcher);
  void persist(ExpertRef key, const std::vector<uint8_t>& bytes);
  void evict_except(const std::vector<ExpertRef>& keep);

  const Checkpoint& checkpoint_;
  ExpertStore& store_;
  HolderTableHandle& table_;
  ActivationLog& log_;
  zmq::context_t& context_;
  MigrationOptions options_;
  ServingProbe serving_;
  LoadThrottle throttle_;

  mutable std::mutex mutex_;
  State state_ = State::kIdle;
  uint64_t target_version_ = 0;
  std::shared_ptr<const HolderTable> target_;
  MigrationStatus status_;
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> loading_{false};
};

}  // namespace dancemoe::node
