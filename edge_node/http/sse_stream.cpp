#include "edge_node/http/sse_stream.h"

namespace dancemoe::node {

std::string sse_event(const nlohmann::json& data) {
  // dump() escapes newlines inside strings, so the event is one line.
  return "data: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

bool SseStream::send_raw(std::string_view bytes) {
  if (failed_) return false;
  if (!write_(bytes)) failed_ = true;
  return !failed_;
}

}  // namespace dancemoe::node
