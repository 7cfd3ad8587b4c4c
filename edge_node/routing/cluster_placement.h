// ClusterPlacement: which node holds which experts, with the endpoints peers
// use to reach each node -- the routing input of every node. It arrives from
// the scheduler (PlacementPrepare) or, in standalone mode, from a placement
// file (`dancemoe-node --placement FILE`), whose JSON format is:
//
//   {"version": 1,
//    "nodes": {"a": {"expert_endpoint": "tcp://127.0.0.1:5551",
//                    "devices": {"cpu0": [[layer, expert], ...]}},
//              "b": {...}}}
//
// or, equivalently, the output of `dancemoe placement solve` plus endpoints:
//
//   {"version": 1, "placement": {"a": {"cpu0": [[0, 1], ...]}, ...},
//    "endpoints": {"a": "tcp://127.0.0.1:5551", ...}}
//
// "version" is optional (default 1) and must grow when a file is reloaded.
// Layers are absolute layer indices (dense layers have no experts). Errors
// name the file, the JSON path and what was expected. Values; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/status.h"
#include "common/model/expert_store.h"
#include "common/model/model_config.h"
#include "common/proto/messages.h"

namespace dancemoe::node {

struct DeviceExperts {
  std::string device;
  std::vector<ExpertKey> experts;
};

struct NodeAssignment {
  std::string node_id;
  std::string expert_endpoint;
  std::vector<DeviceExperts> devices;

  // Every expert of every device, sorted by (layer, expert), without duplicates.
  std::vector<ExpertKey> experts() const;
};

struct ClusterPlacement {
  uint64_t version = 0;
  std::vector<NodeAssignment> nodes;  // sorted by node_id

  const NodeAssignment* find(std::string_view node_id) const;
};

Result<ClusterPlacement> placement_from_json(const nlohmann::json& json, std::string_view source);
Result<ClusterPlacement> read_placement_file(const std::filesystem::path& path);
nlohmann::json placement_to_json(const ClusterPlacement& placement);

ClusterPlacement placement_from_proto(const proto::PlacementPrepare& prepare);
proto::PlacementPrepare placement_to_proto(const ClusterPlacement& placement);

// Checks the placement against the model: every (layer, expert) names an
// expert of a MoE layer, node ids are unique and non-empty. `source` prefixes errors.
Status check_placement(const ClusterPlacement& placement, const ModelConfig& config,
                       std::string_view source);

}  // namespace dancemoe::node
