// Resident memory of this process, from /proc/self/status (Linux).
#pragma once

#include <cstdint>

namespace dancemoe::cli {

// Peak resident set size so far (VmHWM), in bytes; 0 if unknown.
uint64_t peak_resident_bytes();
// Current resident set size (VmRSS), in bytes; 0 if unknown.
uint64_t current_resident_bytes();

}  // namespace dancemoe::cli
