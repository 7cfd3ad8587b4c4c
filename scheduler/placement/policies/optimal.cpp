// `optimal`: the exact minimum of the paper's proxy cost (Eq. 2), the number
// of activations served remotely, under coverage and memory. The weight of
// node n holding expert x is simply f[n][x]; see weighted_choice.h for the
// solver (exact with equal expert sizes, a documented heuristic otherwise).
// Among equally good choices it keeps what the current placement holds (no
// needless migration), then prefers globally popular experts.
#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"
#include "scheduler/placement/policies/weighted_choice.h"

namespace dancemoe::placement {

Result<Placement> place_optimal(const Problem& problem) {
  const std::vector<double> popularity = global_counts(problem);
  std::vector<std::vector<uint8_t>> held;
  WeightedChoice choice;
  choice.weight = &problem.activations.counts;
  choice.tie_key = &popularity;
  if (problem.current) {
    held = node_holdings(*problem.current, problem.model.n_experts_total());
    choice.prefer = &held;
  }
  choice.label = "optimal";
  return place_by_weight(problem, choice);
}

}  // namespace dancemoe::placement
