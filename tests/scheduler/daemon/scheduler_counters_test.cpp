#include "scheduler/daemon/scheduler_counters.h"

#include <doctest/doctest.h>

namespace dancemoe::scheduler {

TEST_CASE("scheduler counters: shown under the names the CLI reads, every reason listed") {
  SchedulerCounters c;
  c.reject(Rejection::kModelMismatch);
  c.reject(Rejection::kModelMismatch);
  c.reject(Rejection::kInvalidRequest);
  c.round(RoundOutcome::kAdopted);
  ++c.reports_stored;
  const nlohmann::ordered_json j = c.to_json();
  CHECK(j["rejected_total"] == 3);
  CHECK(j["rejected_model_mismatch_total"] == 2);
  CHECK(j["rejected_invalid_request_total"] == 1);
  CHECK(j["rejected_undecodable_total"] == 0);
  CHECK(j["rounds_adopted_total"] == 1);
  CHECK(j["reports_stored_total"] == 1);
  CHECK(c.rejected_for(Rejection::kModelMismatch) == 2);
  CHECK(c.rounds_with(RoundOutcome::kError) == 0);
  for (size_t i = 0; i < kRejectionCount; ++i) {
    const std::string name(rejection_name(static_cast<Rejection>(i)));
    CHECK_FALSE(name.empty());
    CHECK(j.contains("rejected_" + name + "_total"));
  }
  CHECK(round_outcome_name(RoundOutcome::kSkipped) == "skipped");
}

}  // namespace dancemoe::scheduler
