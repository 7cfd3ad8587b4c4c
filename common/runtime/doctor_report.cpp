#include "common/runtime/doctor_report.h"

#include <algorithm>

namespace dancemoe {

void DoctorReport::ok(std::string name, std::string detail) {
  checks_.push_back({std::move(name), CheckOutcome::kOk, std::move(detail), ""});
}

void DoctorReport::warn(std::string name, std::string detail, std::string fix) {
  checks_.push_back({std::move(name), CheckOutcome::kWarn, std::move(detail), std::move(fix)});
}

void DoctorReport::fail(std::string name, std::string detail, std::string fix) {
  checks_.push_back({std::move(name), CheckOutcome::kFail, std::move(detail), std::move(fix)});
}

bool DoctorReport::failed() const {
  return std::any_of(checks_.begin(), checks_.end(),
                     [](const DoctorCheck& c) { return c.outcome == CheckOutcome::kFail; });
}

std::string DoctorReport::format() const {
  size_t width = 0;
  for (const DoctorCheck& c : checks_) width = std::max(width, c.name.size());
  std::string out;
  int warnings = 0;
  int failures = 0;
  for (const DoctorCheck& c : checks_) {
    const char* mark = c.outcome == CheckOutcome::kOk     ? "ok  "
                       : c.outcome == CheckOutcome::kWarn ? "WARN"
                                                          : "FAIL";
    warnings += c.outcome == CheckOutcome::kWarn;
    failures += c.outcome == CheckOutcome::kFail;
    out += std::string(mark) + "  " + c.name + std::string(width - c.name.size(), ' ') + "  " +
           c.detail + "\n";
    if (!c.fix.empty()) out += std::string(6 + width + 2, ' ') + "-> fix: " + c.fix + "\n";
  }
  out += std::to_string(checks_.size()) + " checks: " + std::to_string(failures) + " failed, " +
         std::to_string(warnings) + " warning(s)\n";
  return out;
}

}  // namespace dancemoe
