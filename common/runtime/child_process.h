// A long-running child process (a scheduler or a node started by `dancemoe
// demo`, or by an integration test): started in its own process group with
// stdout/stderr going to a log file, stopped with SIGTERM or SIGKILL, always
// killed on destruction -- and sent SIGTERM by the kernel if the parent dies
// first -- so nothing is left behind. Not thread-safe: one owner. Create it
// on a thread that outlives it: Linux delivers that SIGTERM when the thread
// that forked exits.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dancemoe {

class ChildProcess {
 public:
  // argv[0] is the executable's path. Output is appended to `log_path`.
  ChildProcess(std::vector<std::string> argv, std::filesystem::path log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool running();
  pid_t pid() const { return pid_; }
  // SIGTERM, then wait up to `grace`; returns the exit code, nullopt if it
  // had to be killed or died from a signal.
  std::optional<int> stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // SIGKILL (kill -9) and reap.
  void kill();
  // Waits for the process to exit by itself.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  std::string log() const;

 private:
  std::optional<int> reap(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  std::filesystem::path log_path_;
  std::optional<int> exit_code_;
  bool exited_ = false;
};

// Polls until `path` exists and is non-empty (e.g. a --ready-file), up to `timeout`.
bool wait_for_file(const std::filesystem::path& path, std::chrono::milliseconds timeout);

}  // namespace dancemoe
