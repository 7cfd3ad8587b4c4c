// ReasoningSplitter: a chat answer split into its reasoning and its content,
// for models that think aloud between markers (Qwen3 and DeepSeek-R1-style
// models: "<think>" ... "</think>"), as vLLM and llama-server return it
// (`reasoning_content` beside `content`).
//
// An answer that starts -- after any whitespace -- with the open marker is
// reasoning up to the close marker; whitespace right after the close marker
// is dropped; the rest is content. An answer that does not start with the
// open marker is content throughout. Fed piece by piece (a stream): text
// that may still turn into a marker is held back until it is decided, so a
// marker split over two pieces never leaks into either field; finish()
// flushes it (an unterminated thought stays reasoning).
//
// Not thread-safe: one per answer.
#pragma once

#include <string>
#include <string_view>

namespace dancemoe::node {

struct ReasoningMarkers {
  std::string open = "<think>";
  std::string close = "</think>";
};

class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(ReasoningMarkers markers = {});

  struct Delta {
    std::string reasoning;
    std::string content;
    bool empty() const { return reasoning.empty() && content.empty(); }
  };
  Delta feed(std::string_view piece);
  Delta finish();

 private:
  enum class State { kStart, kReasoning, kAfterClose, kContent };
  void step(Delta* out, bool final);

  ReasoningMarkers markers_;
  State state_ = State::kStart;
  std::string pending_;
};

}  // namespace dancemoe::node
