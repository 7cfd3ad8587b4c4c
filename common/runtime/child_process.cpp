#include "common/runtime/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>

namespace dancemoe {

ChildProcess::ChildProcess(std::vector<std::string> argv, std::filesystem::path log_path)
    : log_path_(std::move(log_path)) {
  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  // Built before fork: the child of a multi-threaded parent may only make
  // async-signal-safe calls until exec.
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
}

ChildProcess::~ChildProcess() {
  if (!exited_) kill();
}

bool ChildProcess::running() {
  if (exited_) return false;
  reap(std::chrono::milliseconds(0));
  return !exited_;
}

std::optional<int> ChildProcess::reap(std::chrono::milliseconds timeout) {
  if (exited_ || pid_ <= 0) return exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
      // Kill anything the child left in its group.
      ::kill(-pid_, SIGKILL);
      return exit_code_;
    }
    if (r < 0) {
      exited_ = true;
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<int> ChildProcess::stop(std::chrono::milliseconds grace) {
  if (exited_) return exit_code_;
  ::kill(pid_, SIGTERM);
  reap(grace);
  if (!exited_) kill();
  return exit_code_;
}

void ChildProcess::kill() {
  if (exited_ || pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  reap(std::chrono::seconds(10));
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) { return reap(timeout); }

std::string ChildProcess::log() const {
  std::ifstream in(log_path_);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool wait_for_file(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace dancemoe
