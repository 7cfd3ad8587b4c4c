// The one JSON form of a ClusterPlacement, read and written by the node
// (`dancemoe-node --placement FILE`), the scheduler (status, `placement
// apply`) and the CLI (`placement solve|show|apply`):
//
//   {"version": 1,
//    "nodes": {"a": {"expert_endpoint": "tcp://127.0.0.1:5551",
//                    "devices": {"cpu0": [[layer, expert], ...]}},
//              "b": {...}}}
//
// The reader also takes the compact form a solver prints, node id -> device
// -> experts, with the endpoints beside it:
//
//   {"version": 1, "placement": {"a": {"cpu0": [[0, 1], ...]}, ...},
//    "endpoints": {"a": "tcp://127.0.0.1:5551", ...}}
//
// "version" is optional (default 1). Layers are absolute layer indices
// (dense layers have no experts); layer and expert are integers in
// 0..65535. Other top-level members (a solver's costs, say) are ignored.
// Nodes come out sorted by id, a device's experts sorted and deduplicated.
// Errors name the source, the JSON path and what was expected. Pure
// functions; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/base/status.h"
#include "common/placement/cluster_placement.h"

namespace dancemoe {

// Whether every node must name its expert endpoint: a node routing by the
// placement needs them; a solver's input or output has none.
enum class Endpoints { kRequired, kOptional };

Result<ClusterPlacement> placement_from_json(const nlohmann::json& json, const std::string& source,
                                             Endpoints endpoints = Endpoints::kRequired);
Result<ClusterPlacement> read_placement_file(const std::filesystem::path& path,
                                             Endpoints endpoints = Endpoints::kRequired);
// The "nodes" form, nodes in the placement's order; an empty endpoint is left out.
nlohmann::ordered_json placement_to_json(const ClusterPlacement& placement);

}  // namespace dancemoe
