#include "common/model/split/expert_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/base/unique_fd.h"

namespace dancemoe {
namespace {

std::string padded(int32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "%04d", static_cast<int>(value));
  return text;
}

bool disk_full(int error) { return error == ENOSPC || error == EDQUOT || error == EFBIG; }

}  // namespace

std::string ExpertFiles::file_name(ExpertRef key) {
  return "L" + padded(key.layer) + "-E" + padded(key.expert) + ".bin";
}

std::filesystem::path ExpertFiles::path_of(ExpertRef key) const { return dir_ / file_name(key); }

bool ExpertFiles::exists(ExpertRef key, uint64_t expected_bytes) const {
  struct stat st {};
  return ::stat(path_of(key).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         static_cast<uint64_t>(st.st_size) == expected_bytes;
}

Status ExpertFiles::read(ExpertRef key, uint64_t expected_bytes, uint64_t offset, void* dst,
                         uint64_t n_bytes) const {
  const std::filesystem::path path = path_of(key);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) {
      return not_found(path.string() + ": no such expert file (layer " + std::to_string(key.layer) +
                       " expert " + std::to_string(key.expert) + " is not on this node's disk)");
    }
    return unavailable(path.string() + ": cannot open (" + std::strerror(errno) + ")");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return invalid_argument(path.string() + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) != expected_bytes) {
    return invalid_argument(path.string() + ": has " + std::to_string(st.st_size) +
                            " bytes, but layer " + std::to_string(key.layer) + " expert " +
                            std::to_string(key.expert) + " has " + std::to_string(expected_bytes) +
                            " (a truncated or foreign file; remove it and fetch it again)");
  }
  auto* out = static_cast<uint8_t*>(dst);
  uint64_t done = 0;
  while (done < n_bytes) {
    const ssize_t got =
        ::pread(fd.get(), out + done, n_bytes - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return unavailable(path.string() + ": read failed at byte " + std::to_string(offset + done) +
                         " (" + (got < 0 ? std::strerror(errno) : "unexpected end of file") + ")");
    }
    done += static_cast<uint64_t>(got);
  }
  return Status::ok();
}

Status ExpertFiles::write(ExpertRef key, std::span<const uint8_t> bytes) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return unavailable(dir_.string() + ": cannot create (" + ec.message() + ")");
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path path = path_of(key);
  const std::filesystem::path temporary =
      dir_ / ("." + file_name(key) + "." + std::to_string(::getpid()) + "." +
              std::to_string(counter.fetch_add(1)) + ".part");
  auto fail = [&](const std::string& what, int error) {
    std::filesystem::remove(temporary, ec);
    const std::string message =
        path.string() + ": " + what + " (" + std::strerror(error) + "); the expert stays in memory";
    return disk_full(error) ? resource_exhausted(message) : unavailable(message);
  };
  UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return fail("cannot create a temporary file", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t put = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return fail("cannot write", put < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(put);
  }
  if (::fsync(fd.get()) != 0) return fail("cannot sync", errno);
  fd.reset();
  if (::rename(temporary.c_str(), path.c_str()) != 0) return fail("cannot rename", errno);
  return Status::ok();
}

bool ExpertFiles::remove(ExpertRef key) const {
  std::error_code ec;
  return std::filesystem::remove(path_of(key), ec);
}

}  // namespace dancemoe
