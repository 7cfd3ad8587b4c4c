#include "common/model/split/expert_files.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "tests/support/paths.h"

namespace dancemoe {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

TEST_CASE("expert files: a written expert reads back, and only with its size") {
  testing::TempDir tmp("expert-files");
  const ExpertFiles files(tmp.path() / "experts");
  const std::vector<uint8_t> bytes = pattern(5000);
  CHECK_FALSE(files.exists({2, 9}, bytes.size()));
  REQUIRE(files.write({2, 9}, bytes).is_ok());
  CHECK(files.path_of({2, 9}).filename() == "L0002-E0009.bin");
  CHECK(files.exists({2, 9}, bytes.size()));
  CHECK_FALSE(files.exists({2, 9}, bytes.size() + 1));
  std::vector<uint8_t> back(1000);
  REQUIRE(files.read({2, 9}, bytes.size(), 4000, back.data(), back.size()).is_ok());
  CHECK(std::equal(back.begin(), back.end(), bytes.begin() + 4000));
  const Status wrong = files.read({2, 9}, 4999, 0, back.data(), back.size());
  CHECK(wrong.code() == StatusCode::kInvalidArgument);
  CHECK(wrong.message().find("L0002-E0009.bin: has 5000 bytes") != std::string::npos);
  const Status missing = files.read({2, 8}, 10, 0, back.data(), 10);
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message().find("L0002-E0008.bin") != std::string::npos);
  // No temporary file is left behind.
  int64_t n = 0;
  for (const auto& entry : fs::directory_iterator(files.dir())) n += entry.exists() ? 1 : 0;
  CHECK(n == 1);
  CHECK(files.remove({2, 9}));
  CHECK_FALSE(files.remove({2, 9}));
}

// The kernel refuses the write (a file-size limit: EFBIG, as a full disk
// gives ENOSPC) in a child process, so the limit does not touch the test.
TEST_CASE("expert files: a disk that refuses the write is resource_exhausted, nothing left") {
  testing::TempDir tmp("expert-files-full");
  const ExpertFiles files(tmp.path() / "experts");
  REQUIRE(files.write({0, 0}, pattern(10)).is_ok());  // the directory exists
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const Status s = files.write({1, 1}, pattern(100000));
    const bool named = s.message().find("L0001-E0001.bin") != std::string::npos;
    ::_exit(s.code() == StatusCode::kResourceExhausted && named ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(files.path_of({1, 1})));
  int64_t n = 0;
  for (const auto& entry : fs::directory_iterator(files.dir())) n += entry.exists() ? 1 : 0;
  CHECK(n == 1);  // only L0000-E0000.bin: the temporary file is gone
}

}  // namespace
}  // namespace dancemoe
