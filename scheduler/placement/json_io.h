// JSON form of placement problems, as used by
// `dancemoe placement solve` (scheduler/cli/cluster/placement_command.cpp) and the
// simulator's configs. Other tools depend on this format; add fields, never
// rename them.
//
// Problem:
//   {"model": {"layers": [{"experts": 64, "expert_bytes": 12582912}, ...]},
//    "nodes": [{"id": "a", "remote_penalty_s": 0.004,
//               "devices": [{"id": "gpu0", "expert_budget_bytes": 8000000000,
//                            "load_bytes_per_s": 2.0e9,
//                            "compute_cost": 0.1}]}],   optional, default 1
//    "activations": {"a": [[count of expert 0 of layer 0, ...], ...one list per layer...]},
//    "horizon_s": 300,          optional, default 300
//    "window_s": 300}           optional, default horizon_s
// Activation counts are over a window of window_s seconds: the rate of an
// expert is count / window_s, so rate * H = count * horizon_s / window_s in
// the seconds cost. Every node needs its activations (zeros for a node that
// saw nothing), one list per layer with one count per expert.
//
// Placements travel in the cluster's one JSON form
// (common/placement/placement_json.h), converted by cluster_form.h.
//
// Errors are invalid_argument naming the JSON path ("nodes[1].devices[0].
// expert_budget_bytes") and what was expected. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "common/base/status.h"
#include "scheduler/placement/types.h"

namespace dancemoe::placement {

Result<Problem> problem_from_json(const nlohmann::json& json);

}  // namespace dancemoe::placement
