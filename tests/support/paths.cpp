#include "tests/support/paths.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string_view>
#include <system_error>

namespace dancemoe::testing {

std::filesystem::path source_dir() { return DMOE_SOURCE_DIR; }
std::filesystem::path build_dir() { return DMOE_BUILD_DIR; }
std::filesystem::path shared_dir() { return DMOE_SHARED_DIR; }

std::optional<std::filesystem::path> shared_file(const std::filesystem::path& relative) {
  const std::filesystem::path path = shared_dir() / relative;
  if (std::filesystem::exists(path)) return path;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string_view(ci) != "" && std::string_view(ci) != "false") {
    FAIL_CHECK(path.string() << " is missing: CI must have ../shared beside the checkout");
  } else {
    MESSAGE("SKIPPED: " << path.string() << " is not present (../shared beside the checkout)");
  }
  return std::nullopt;
}

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
