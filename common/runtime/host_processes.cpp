#include "common/runtime/host_processes.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace dancemoe {

std::vector<int> processes_named(std::string_view comm) {
  std::vector<int> pids;
  const int self = static_cast<int>(::getpid());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.size() > 9 ||
        name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream in(entry.path() / "comm");
    std::string command;
    std::getline(in, command);
    if (command != comm) continue;
    const int pid = std::stoi(name);
    if (pid != self) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace dancemoe
