// Server-sent events as the OpenAI streaming API writes them: each event is
// one line "data: <json>\n\n"; the stream ends with "data: [DONE]\n\n".
// SseStream wraps the transport's write function and remembers a failed
// write (the client went away), after which nothing more is written.
// Not thread-safe (one per response).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dancemoe::node {

std::string sse_event(const nlohmann::json& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

class SseStream {
 public:
  // `write` returns false when the bytes could not be sent.
  explicit SseStream(std::function<bool(std::string_view)> write) : write_(std::move(write)) {}

  bool send(const nlohmann::json& data) { return send_raw(sse_event(data)); }
  bool done() { return send_raw(kSseDone); }
  bool failed() const { return failed_; }

 private:
  bool send_raw(std::string_view bytes);

  std::function<bool(std::string_view)> write_;
  bool failed_ = false;
};

}  // namespace dancemoe::node
