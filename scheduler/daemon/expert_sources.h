// Where expert weights exist in the cluster (partial checkpoints,
// docs/partial-checkpoints.md): a node can serve an expert's weights to a
// peer when it has the expert's file on disk (Register.expert_files: every
// expert unless it registered a partial list) or holds it in memory (the
// committed placement). A placement is only loadable if every expert it
// places exists on some up node; and a node loads an expert fastest from
// its own disk.
//
// Pure functions of their inputs; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/daemon/planner.h"

namespace dancemoe::scheduler {

// ok when every expert of the model exists on some node of the plan (placed
// or routing-only), on disk or -- per `current` -- in memory;
// failed_precondition otherwise, naming the first missing experts, their
// files and what to do.
Status check_expert_sources(const PlanProblem& plan, const ModelInfo& model,
                            const store::PlacementRecord* current);

// Whether placed node `n` of the plan has expert `x`'s file.
bool has_expert_file(const PlanProblem& plan, size_t n, placement::ExpertIndex x);

// Swaps experts of one layer (equal sizes: budgets stay met) between nodes
// of `placement` so that each node holds experts it has on disk where it
// can: x on node a without its file, a's file of y held by b without its
// file, and b's file of x -- swap. Coverage and per-device memory are
// unchanged. Returns the number of swaps. For cold starts, where no
// statistics make one node's experts better than another's.
int prefer_expert_files(const PlanProblem& plan, placement::Placement* placement);

}  // namespace dancemoe::scheduler
