#include "scheduler/placement/policy.h"

#include <array>

#include "scheduler/placement/policies/policies.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::placement {
namespace {

// An explicit table rather than self-registration: objects of a static
// library that nothing references are dropped by the linker, and a policy
// must never silently disappear.
constexpr std::array<PolicyInfo, 8> kPolicies = {{
    {"uniform", "one copy of each expert, spread evenly; statistics unused", &place_uniform},
    {"redundance", "uniform, then spare memory filled with the globally most used experts",
     &place_redundance},
    {"smartmoe", "one copy of each expert, global load balanced across nodes", &place_smartmoe},
    {"eplb", "replicas by load, heaviest first onto the least-loaded node", &place_eplb},
    {"dancemoe", "the paper: entropy-based per-layer counts, top-N with coverage repair",
     &place_dancemoe},
    {"optimal", "exact minimum of the proxy cost (min-cost flow)", &place_optimal},
    {"optimal-migration", "exact minimum of C(P') + T_mig(P, P') in seconds",
     &place_optimal_migration},
    {"latency",
     "fewest steps waiting for a peer: co-activated experts and whole layers together, "
     "migration-aware",
     &place_latency, Objective::kLatency},
}};

}  // namespace

std::span<const PolicyInfo> all_policies() { return kPolicies; }

const PolicyInfo* find_policy(std::string_view name) {
  for (const PolicyInfo& policy : kPolicies) {
    if (policy.name == name) return &policy;
  }
  return nullptr;
}

std::string policy_names() {
  std::string names;
  for (const PolicyInfo& policy : kPolicies) {
    if (!names.empty()) names += ", ";
    names += policy.name;
  }
  return names;
}

Result<Placement> solve(std::string_view policy_name, const Problem& problem) {
  const PolicyInfo* policy = find_policy(policy_name);
  if (policy == nullptr) {
    return invalid_argument("unknown placement policy '" + std::string(policy_name) +
                            "'; known policies: " + policy_names());
  }
  DMOE_RETURN_IF_ERROR(validate_problem(problem));
  DMOE_ASSIGN_OR_RETURN(Placement placement, policy->place(problem));
  Status check = check_placement(problem, placement);
  if (!check.is_ok()) {
    return internal_error("policy '" + std::string(policy_name) +
                          "' returned an invalid placement: " + check.message());
  }
  return placement;
}

}  // namespace dancemoe::placement
