// StopMatcher: finds stop strings in streamed text without ever emitting
// text that might turn out to be the start of a stop string. Text is pushed
// as it is decoded; push() returns what is safe to show now, holding back the
// longest suffix that is a prefix of some stop string. Not thread-safe.
#pragma once

#include <string>
#include <vector>

namespace dancemoe {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends text; returns the text that can be emitted. After a stop string
  // is found, stopped() is true and the stop string and anything after it
  // are never emitted.
  std::string push(const std::string& text);
  // The held-back tail at the end of generation (empty once stopped).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace dancemoe
