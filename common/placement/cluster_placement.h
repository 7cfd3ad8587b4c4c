// ClusterPlacement: which device of which node holds which experts, with the
// endpoint peers use to reach each node. The one placement type of the
// cluster: the scheduler stores, sends (PlacementPrepare) and shows it, a
// node routes by it, the CLI reads and prints it; its one JSON form is in
// common/placement/placement_json.h. (The placement solvers work on a dense
// form of the same thing, placement::Placement, and convert at their edge.)
//
// Nodes appear in any order unless a function says otherwise; an expert may
// be held by several nodes (replicas) but at most once per node. Plain
// values; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/model/expert_ref.h"
#include "common/model/model_config.h"

namespace dancemoe {

struct DevicePlacement {
  std::string device;
  std::vector<ExpertRef> experts;
  friend bool operator==(const DevicePlacement&, const DevicePlacement&) = default;
};

struct NodePlacement {
  std::string node_id;
  std::string expert_endpoint;  // empty where a placement has no endpoints (a solver's)
  std::vector<DevicePlacement> devices;

  // Every expert of every device, sorted, without duplicates.
  std::vector<ExpertRef> experts() const;
  friend bool operator==(const NodePlacement&, const NodePlacement&) = default;
};

struct ClusterPlacement {
  uint64_t version = 0;
  std::vector<NodePlacement> nodes;

  const NodePlacement* find(std::string_view node_id) const;
  friend bool operator==(const ClusterPlacement&, const ClusterPlacement&) = default;
};

// Checks a placement against a model: node ids are non-empty and unique, and
// every expert names an expert of a MoE layer. `source` prefixes errors.
Status check_against_model(const ClusterPlacement& placement, const ModelConfig& config,
                           std::string_view source);

}  // namespace dancemoe
