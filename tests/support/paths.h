// Where tests find the source tree, the build tree, the shared data beside
// the checkout, and fresh temporary directories.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace dancemoe::testing {

std::filesystem::path source_dir();
std::filesystem::path build_dir();
// ../shared beside the checkout (real routing traces); may be absent.
std::filesystem::path shared_dir();
// `relative` under ../shared, or nullopt when it is not there. A missing file
// fails the calling test under CI (CI=true: CI always has ../shared, so its
// absence is a broken set-up) and is reported as "SKIPPED: ..." elsewhere,
// which ctest counts as a skipped test. Call at the start of a test case.
std::optional<std::filesystem::path> shared_file(const std::filesystem::path& relative);

// A fresh, empty directory under the build tree's test scratch area, removed
// when the object goes out of scope.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dancemoe::testing
