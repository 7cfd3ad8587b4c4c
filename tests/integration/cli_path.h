// The `dancemoe` CLI this build made, for the integration tests that run it
// (header-only: the suite compiles only *_test.cpp, and defines
// DMOE_CLI_PATH).
#pragma once

#include <string>

namespace dancemoe {

inline const std::string kCli = DMOE_CLI_PATH;

}  // namespace dancemoe
