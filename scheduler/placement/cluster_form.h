// The solvers' dense Placement (flat expert indices, nodes and devices by
// position in the Problem) to and from the cluster's ClusterPlacement
// (common/placement/cluster_placement.h: node ids, device names, ExpertRef),
// which is what the scheduler stores and sends, the node routes by and every
// JSON file holds. Pure functions; thread-safe.
#pragma once

#include "common/base/status.h"
#include "common/placement/cluster_placement.h"
#include "scheduler/placement/types.h"

namespace dancemoe::placement {

// Every node and device of the problem appears, with its experts ascending.
// Endpoints are left empty (a problem has none); `version` is set as given.
ClusterPlacement to_cluster_placement(const Problem& problem, const Placement& placement,
                                      uint64_t version = 1);

// Nodes and devices are matched by id (left out: they hold nothing); an id
// the problem lacks, an expert outside the model or an expert listed twice on
// one device is invalid_argument naming "placement.<node>.<device>".
Result<Placement> from_cluster_placement(const Problem& problem, const ClusterPlacement& placement);

}  // namespace dancemoe::placement
