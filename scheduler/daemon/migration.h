// The state of one two-phase migration (DESIGN.md §5.6) and of per-node
// re-synchronisations.
//
// Two-phase migration to version v:
//   prepare: every participant (every up node) gets PlacementPrepare(v) with
//            the whole placement; it loads its new experts while serving
//            with the old set and answers Ready(v) (or Abort(v)).
//   commit:  when every participant is ready, v is committed in the store
//            and Commit(v) goes to every participant; nodes switch routing
//            and only then evict what v dropped.
//   abort:   a participant's Abort, a participant going down or
//            re-registering (it lost its prepared state), or the prepare
//            deadline aborts v: Abort(v) goes to every participant and the
//            committed placement stays active.
// At most one migration is in progress; rounds wait for it.
//
// Re-synchronisation: a node that registers with a version or resident set
// other than the committed placement gives it (a restarted node, a new
// node, a node back from down) gets PlacementPrepare(committed) alone and,
// on Ready, Commit(committed). It does not change the committed version.
//
// This class only tracks state and deadlines; the service sends the
// messages and writes the store. Not thread-safe: owned by the service loop.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler/store/records.h"

namespace dancemoe::scheduler {

class Migration {
 public:
  Migration(store::PlacementRecord placement, store::MigrationRecord record,
            std::set<std::string> participants, int64_t deadline_ms);

  uint64_t version() const { return placement_.version; }
  const store::PlacementRecord& placement() const { return placement_; }
  const store::MigrationRecord& record() const { return record_; }
  const std::set<std::string>& participants() const { return participants_; }
  bool is_participant(const std::string& node) const { return participants_.count(node) > 0; }

  // Records a Ready; returns true when every participant is ready.
  bool mark_ready(const std::string& node);
  bool all_ready() const { return ready_.size() == participants_.size(); }
  const std::set<std::string>& ready() const { return ready_; }
  std::vector<std::string> waiting() const;
  double progress() const;

  int64_t deadline_ms() const { return deadline_ms_; }  // steady
  bool expired(int64_t now_ms) const { return now_ms >= deadline_ms_; }

 private:
  store::PlacementRecord placement_;
  store::MigrationRecord record_;
  std::set<std::string> participants_;
  std::set<std::string> ready_;
  int64_t deadline_ms_;
};

struct Resync {
  uint64_t version = 0;
  int64_t deadline_ms = 0;  // steady
};

}  // namespace dancemoe::scheduler
