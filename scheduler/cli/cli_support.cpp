#include "scheduler/cli/cli_support.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace dancemoe::cli {

int report_failure(const std::string& command, const Status& status) {
  std::fprintf(stderr, "dancemoe %s: %s\n", command.c_str(), status.message().c_str());
  const bool bad_input =
      status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound;
  return bad_input ? 2 : 1;
}

Result<std::vector<int32_t>> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || end == item.c_str() || *end != '\0' || errno != 0 || value < 0 ||
        value > std::numeric_limits<int32_t>::max()) {
      return invalid_argument("--ids: item " + std::to_string(ids.size() + 1) + " ('" + item +
                              "') is not a non-negative integer token id");
    }
    ids.push_back(static_cast<int32_t>(value));
    pos = comma + 1;
  }
  return ids;
}

Result<std::filesystem::path> locate_binary(const std::string& name) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    const std::filesystem::path dir = self.parent_path();
    candidates = {dir / name, dir.parent_path() / "scheduler" / name,
                  dir.parent_path() / "edge_node" / name};
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string d;
    while (std::getline(dirs, d, ':')) {
      if (!d.empty()) candidates.push_back(std::filesystem::path(d) / name);
    }
  }
  for (const std::filesystem::path& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0) return c;
  }
  return not_found(name + ": not found next to dancemoe (" + self.parent_path().string() +
                   "), in the build tree, or on PATH; build it or put it on PATH");
}

}  // namespace dancemoe::cli
