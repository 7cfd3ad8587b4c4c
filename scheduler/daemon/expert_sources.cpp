#include "scheduler/daemon/expert_sources.h"

#include <algorithm>

#include "common/model/split/expert_files.h"

namespace dancemoe::scheduler {
namespace {

bool member_has_file(const Member& m, int32_t flat) {
  return !m.expert_files_partial || (static_cast<size_t>(flat) < m.expert_files.size() &&
                                     m.expert_files[static_cast<size_t>(flat)]);
}

}  // namespace

bool has_expert_file(const PlanProblem& plan, size_t n, placement::ExpertIndex x) {
  return member_has_file(*plan.placed[n], x);
}

Status check_expert_sources(const PlanProblem& plan, const ModelInfo& model,
                            const store::PlacementRecord* current) {
  const int32_t n_total = model.index.n_total;
  std::vector<bool> found(static_cast<size_t>(n_total), false);
  std::vector<const Member*> nodes = plan.placed;
  nodes.insert(nodes.end(), plan.routing_only.begin(), plan.routing_only.end());
  for (const Member* m : nodes) {
    if (!m->expert_files_partial) return Status::ok();  // one node has every file
    for (int32_t x = 0; x < n_total; ++x) {
      if (member_has_file(*m, x)) found[static_cast<size_t>(x)] = true;
    }
    if (current == nullptr) continue;
    for (const NodePlacement& np : current->nodes) {
      if (np.node_id != m->id()) continue;
      for (const DevicePlacement& d : np.devices) {
        for (const ExpertRef& r : d.experts) {
          const int32_t x =
              model.flat(static_cast<uint32_t>(r.layer), static_cast<uint32_t>(r.expert));
          if (x >= 0) found[static_cast<size_t>(x)] = true;
        }
      }
    }
  }
  std::vector<int32_t> missing;
  for (int32_t x = 0; x < n_total; ++x) {
    if (!found[static_cast<size_t>(x)]) missing.push_back(x);
  }
  if (missing.empty()) return Status::ok();
  std::string listed;
  for (size_t i = 0; i < missing.size() && i < 4; ++i) {
    const ExpertRef r = model.ref(missing[i]);
    listed += (i ? ", " : "") + model.describe(missing[i]) + " (experts/" +
              ExpertFiles::file_name(r) + ")";
  }
  if (missing.size() > 4) listed += ", ...";
  return failed_precondition(
      std::to_string(missing.size()) + " of " + std::to_string(n_total) +
      " experts exist on no up node, neither on disk nor in memory: " + listed +
      "; no placement could load them -- copy their files from `dancemoe model split` output to "
      "a node (or start a node with the whole model), and it will register them");
}

int prefer_expert_files(const PlanProblem& plan, placement::Placement* p) {
  const placement::ModelShape& shape = plan.problem.model;
  const size_t n_nodes = p->experts.size();
  // holder[x]: (node, device) of each placed copy.
  auto holds = [&](size_t n, placement::ExpertIndex x) {
    for (const auto& device : p->experts[n]) {
      if (std::find(device.begin(), device.end(), x) != device.end()) return true;
    }
    return false;
  };
  int swaps = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t a = 0; a < n_nodes; ++a) {
      for (size_t da = 0; da < p->experts[a].size(); ++da) {
        for (placement::ExpertIndex& x : p->experts[a][da]) {
          if (has_expert_file(plan, a, x)) continue;
          const int32_t layer = shape.layer_of(x);
          bool done = false;
          for (size_t b = 0; b < n_nodes && !done; ++b) {
            if (b == a || !has_expert_file(plan, b, x) || holds(b, x)) continue;
            for (size_t db = 0; db < p->experts[b].size() && !done; ++db) {
              for (placement::ExpertIndex& y : p->experts[b][db]) {
                if (shape.layer_of(y) != layer || has_expert_file(plan, b, y) ||
                    !has_expert_file(plan, a, y) || holds(a, y)) {
                  continue;
                }
                std::swap(x, y);
                ++swaps;
                done = changed = true;
                break;
              }
            }
          }
        }
        std::sort(p->experts[a][da].begin(), p->experts[a][da].end());
      }
    }
  }
  for (auto& node : p->experts) {
    for (auto& device : node) std::sort(device.begin(), device.end());
  }
  return swaps;
}

}  // namespace dancemoe::scheduler
