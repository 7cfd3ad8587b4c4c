// Child processes in tests: the runtime's ChildProcess (common/runtime), which
// `dancemoe demo` uses to run its cluster too.
#pragma once

#include "common/runtime/child_process.h"

namespace dancemoe::testing {

using dancemoe::ChildProcess;
using dancemoe::wait_for_file;

}  // namespace dancemoe::testing
