#include "scheduler/daemon/migration.h"

namespace dancemoe::scheduler {

Migration::Migration(store::PlacementRecord placement, store::MigrationRecord record,
                     std::set<std::string> participants, int64_t deadline_ms)
    : placement_(std::move(placement)),
      record_(std::move(record)),
      participants_(std::move(participants)),
      deadline_ms_(deadline_ms) {}

bool Migration::mark_ready(const std::string& node) {
  if (participants_.count(node) > 0) ready_.insert(node);
  return all_ready();
}

std::vector<std::string> Migration::waiting() const {
  std::vector<std::string> out;
  for (const std::string& node : participants_) {
    if (ready_.count(node) == 0) out.push_back(node);
  }
  return out;
}

double Migration::progress() const {
  if (participants_.empty()) return 1.0;
  return static_cast<double>(ready_.size()) / static_cast<double>(participants_.size());
}

}  // namespace dancemoe::scheduler
