#include "edge_node/http/reasoning_splitter.h"

#include <algorithm>

namespace dancemoe::node {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ReasoningSplitter::ReasoningSplitter(ReasoningMarkers markers) : markers_(std::move(markers)) {}

ReasoningSplitter::Delta ReasoningSplitter::feed(std::string_view piece) {
  pending_.append(piece);
  Delta out;
  step(&out, false);
  return out;
}

ReasoningSplitter::Delta ReasoningSplitter::finish() {
  Delta out;
  step(&out, true);
  return out;
}

void ReasoningSplitter::step(Delta* out, bool final) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        const size_t text =
            std::find_if_not(pending_.begin(), pending_.end(), is_space) - pending_.begin();
        const std::string_view rest = std::string_view(pending_).substr(text);
        if (rest.size() >= markers_.open.size()) {
          if (rest.substr(0, markers_.open.size()) == markers_.open) {
            pending_.erase(0, text + markers_.open.size());
            state_ = State::kReasoning;
          } else {
            state_ = State::kContent;
          }
          continue;
        }
        if (!final && markers_.open.compare(0, rest.size(), rest) == 0) return;  // undecided
        state_ = State::kContent;
        continue;
      }
      case State::kReasoning: {
        const size_t close = pending_.find(markers_.close);
        if (close != std::string::npos) {
          out->reasoning += pending_.substr(0, close);
          pending_.erase(0, close + markers_.close.size());
          state_ = State::kAfterClose;
          continue;
        }
        const size_t hold = final ? 0 : partial_marker(pending_, markers_.close);
        out->reasoning += pending_.substr(0, pending_.size() - hold);
        pending_.erase(0, pending_.size() - hold);
        return;
      }
      case State::kAfterClose: {
        const size_t text =
            std::find_if_not(pending_.begin(), pending_.end(), is_space) - pending_.begin();
        pending_.erase(0, text);
        if (pending_.empty()) return;
        state_ = State::kContent;
        continue;
      }
      case State::kContent:
        out->content += pending_;
        pending_.clear();
        return;
    }
  }
}

}  // namespace dancemoe::node
