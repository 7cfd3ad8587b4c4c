// DoctorReport: one aligned line per check, the fix under each warning and
// failure, a count at the end; failed() only for failures.
#include "common/runtime/doctor_report.h"

#include <doctest/doctest.h>

namespace dancemoe {
namespace {

TEST_CASE("doctor report: lines, fixes and the verdict") {
  DoctorReport r;
  r.ok("model", "tiny");
  CHECK_FALSE(r.failed());
  r.warn("keys", "--insecure", "use keys");
  CHECK_FALSE(r.failed());
  r.fail("ports", "--http 127.0.0.1:8080: in use", "choose another");
  CHECK(r.failed());
  CHECK(r.format() ==
        "ok    model  tiny\n"
        "WARN  keys   --insecure\n"
        "             -> fix: use keys\n"
        "FAIL  ports  --http 127.0.0.1:8080: in use\n"
        "             -> fix: choose another\n"
        "3 checks: 1 failed, 1 warning(s)\n");
}

}  // namespace
}  // namespace dancemoe
