#include "scheduler/cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace dancemoe::cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)),
      tty_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (finished_ || total == 0) return;
  total_ = total;
  const int percent = static_cast<int>(done * 100 / total);
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (percent == last_percent_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %3d%% %.1f/%.1f MB", label_.c_str(), bar.c_str(), percent,
                 static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6);
    std::fflush(stderr);
  } else if (percent / 25 != last_percent_ / 25 && percent < 100) {
    std::fprintf(stderr, "%s: %d%%\n", label_.c_str(), percent);
  }
  last_percent_ = percent;
  last_draw_ = now;
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (last_percent_ < 0) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s: done, %.1f MB in %.1f s\n", label_.c_str(),
               static_cast<double>(total_) / 1e6, seconds);
}

}  // namespace dancemoe::cli
