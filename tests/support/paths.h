// Where tests find the source tree, the build tree, the shared data beside
// the checkout, and fresh temporary directories.
#pragma once

#include <filesystem>
#include <string>

namespace dancemoe::testing {

std::filesystem::path source_dir();
std::filesystem::path build_dir();
// ../shared beside the checkout (real routing traces); may be absent.
std::filesystem::path shared_dir();

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
