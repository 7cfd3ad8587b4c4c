// Entry points of the placement policies (one file each in this folder).
// Callers use the registry in scheduler/placement/policy.h; these are listed
// here for the registry and for tests. Each takes a validated Problem.
// Pure functions: safe from any thread.
#pragma once

#include "common/base/status.h"
#include "scheduler/placement/types.h"

namespace dancemoe::placement {

Result<Placement> place_dancemoe(const Problem& problem);
Result<Placement> place_uniform(const Problem& problem);
Result<Placement> place_redundance(const Problem& problem);
Result<Placement> place_smartmoe(const Problem& problem);
Result<Placement> place_eplb(const Problem& problem);
Result<Placement> place_optimal(const Problem& problem);
Result<Placement> place_optimal_migration(const Problem& problem);
Result<Placement> place_latency(const Problem& problem);

}  // namespace dancemoe::placement
