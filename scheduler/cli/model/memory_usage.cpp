#include "scheduler/cli/model/memory_usage.h"

#include <fstream>
#include <string>

namespace dancemoe::cli {
namespace {

uint64_t status_field_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

}  // namespace

uint64_t peak_resident_bytes() { return status_field_kib("VmHWM"); }
uint64_t current_resident_bytes() { return status_field_kib("VmRSS"); }

}  // namespace dancemoe::cli
