// A progress bar on stderr for long work (loading a model, writing one).
// On a terminal it redraws one line; otherwise it prints a line at every
// 25 %, so logs stay readable. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dancemoe::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();

  void update(uint64_t done, uint64_t total);
  void finish();

 private:
  std::string label_;
  bool tty_;
  bool finished_ = false;
  int last_percent_ = -1;
  uint64_t total_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace dancemoe::cli
