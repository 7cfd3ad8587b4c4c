#include "tests/support/paths.h"

#include <unistd.h>

#include <atomic>
#include <system_error>

namespace dancemoe::testing {

std::filesystem::path source_dir() { return DMOE_SOURCE_DIR; }
std::filesystem::path build_dir() { return DMOE_BUILD_DIR; }
std::filesystem::path shared_dir() { return DMOE_SHARED_DIR; }

TempDir::TempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  path_ = build_dir() / "test-scratch" /
          (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dancemoe::testing
