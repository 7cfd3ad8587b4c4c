#include "common/generation/stop_matcher.h"

#include <algorithm>

namespace dancemoe {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string StopMatcher::push(const std::string& text) {
  if (stopped_) return {};
  pending_ += text;
  size_t first_stop = std::string::npos;
  for (const std::string& stop : stops_) first_stop = std::min(first_stop, pending_.find(stop));
  if (first_stop != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first_stop);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix of pending_ that starts some stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, pending_.size()); len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, stop, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(pending_);
  return out;
}

}  // namespace dancemoe
