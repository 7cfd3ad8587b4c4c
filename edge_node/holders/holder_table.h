// HolderTable: one placement seen from one node -- for every (layer,
// expert), whether this node holds it (and on which of its devices) and
// which peers do. The executor
// consults it for every MoE layer; migration replaces it atomically on
// commit (HolderTableHandle), so a forward pass uses one consistent table
// per layer while the next layer may already see the new one.
//
// Immutable after build(); shared as shared_ptr<const HolderTable>, so
// reads need no lock. HolderTableHandle is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/model/model_config.h"
#include "common/placement/cluster_placement.h"

namespace dancemoe::node {

struct PeerInfo {
  std::string node_id;
  std::string expert_endpoint;
};

class HolderTable {
 public:
  // `self_id` may be absent from the placement (a node with no experts).
  // `devices` names this node's devices in its order ("cpu", "cpu:1",
  // "cuda:0"); the placement's devices for self_id must be among them
  // (invalid_argument naming the device and the node's devices otherwise).
  static Result<std::shared_ptr<const HolderTable>> build(const ClusterPlacement& placement,
                                                          const std::string& self_id,
                                                          const ModelConfig& config,
                                                          const std::vector<std::string>& devices);
  // A table with no placement: nothing local, no peers (a node before its first placement).
  static std::shared_ptr<const HolderTable> empty(const ModelConfig& config);

  uint64_t version() const { return placement_.version; }
  const ClusterPlacement& placement() const { return placement_; }

  bool is_local(int64_t layer, int64_t expert) const { return local_[index(layer, expert)] != 0; }
  // Index of the device of this node that holds it; -1 when not local.
  int32_t local_device(int64_t layer, int64_t expert) const {
    return static_cast<int32_t>(local_[index(layer, expert)]) - 1;
  }
  // Peers holding the expert: indices into peers(), ascending.
  std::span<const int32_t> remote_holders(int64_t layer, int64_t expert) const {
    const size_t i = index(layer, expert);
    return {holders_.data() + holder_start_[i], holders_.data() + holder_start_[i + 1]};
  }
  // Every node but this one, sorted by node id.
  const std::vector<PeerInfo>& peers() const { return peers_; }
  int32_t peer_index(const std::string& node_id) const;  // -1 if absent

  std::vector<ExpertRef> local_experts() const;
  // The device index of each of local_experts(), in the same order.
  std::vector<int32_t> local_devices() const;
  // True when some node holds every expert of every MoE layer.
  bool covers_all() const { return uncovered_ == 0; }
  int64_t n_uncovered() const { return uncovered_; }

 private:
  HolderTable() = default;
  size_t index(int64_t layer, int64_t expert) const {
    return static_cast<size_t>(layer * n_experts_ + expert);
  }

  ClusterPlacement placement_;
  int64_t n_layers_ = 0;
  int64_t n_experts_ = 0;
  std::vector<int16_t> local_;  // [layer * n_experts + expert]: device index + 1, 0: not here
  std::vector<uint32_t> holder_start_;  // CSR over holders_, size n_layers * n_experts + 1
  std::vector<int32_t> holders_;
  std::vector<PeerInfo> peers_;
  int64_t uncovered_ = 0;
};

// The table in force. set() is the atomic switch of a commit.
class HolderTableHandle {
 public:
  explicit HolderTableHandle(std::shared_ptr<const HolderTable> table) : table_(std::move(table)) {}
  std::shared_ptr<const HolderTable> get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return table_;
  }
  void set(std::shared_ptr<const HolderTable> table) {
    std::lock_guard<std::mutex> lock(mutex_);
    table_ = std::move(table);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const HolderTable> table_;
};

}  // namespace dancemoe::node
