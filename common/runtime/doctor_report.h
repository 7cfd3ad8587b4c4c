// What `dancemoe doctor` (dancemoe-node --doctor, dancemoe-scheduler
// --doctor) prints: one line per check of this machine's set-up, each
// passed, a warning or a failure, and for the last two what to do about it.
// The checks themselves live with the daemon whose flags they check
// (edge_node/agent/node_doctor.h, scheduler/daemon/scheduler_doctor.h).
//
//   ok    model     Qwen3MoeForCausalLM, 4 layers x 8 experts, id 3f2a...
//   WARN  keys      --insecure: ...
//                   -> fix: ...
//   FAIL  ports     --http 127.0.0.1:8080: in use
//                   -> fix: ...
//
// Not thread-safe (one run builds one report).
#pragma once

#include <string>
#include <vector>

namespace dancemoe {

enum class CheckOutcome { kOk, kWarn, kFail };

struct DoctorCheck {
  std::string name;  // "model", "ports", ...
  CheckOutcome outcome = CheckOutcome::kOk;
  std::string detail;  // what was found
  std::string fix;     // what to do (warnings and failures)
};

class DoctorReport {
 public:
  void ok(std::string name, std::string detail);
  void warn(std::string name, std::string detail, std::string fix);
  void fail(std::string name, std::string detail, std::string fix);

  const std::vector<DoctorCheck>& checks() const { return checks_; }
  bool failed() const;
  // The lines above, and a last line counting failures and warnings.
  std::string format() const;

 private:
  std::vector<DoctorCheck> checks_;
};

}  // namespace dancemoe
