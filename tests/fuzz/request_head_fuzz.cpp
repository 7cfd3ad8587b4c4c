// Fuzz target: the HTTP request head scanner (common/http/request_head.h)
// and the JSON guards every HTTP body goes through (json_nesting.h,
// json_preview.h) must never crash, hang or read out of bounds, and what
// they accept must be consistent: a complete head ends inside the input,
// the Expect line lies within the head, and text that passed the nesting
// check parses and previews without recursion trouble.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/base/json_nesting.h"
#include "common/base/json_preview.h"
#include "common/http/request_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dancemoe::http::RequestHeadLimits limits;
  limits.max_bytes = 512;
  limits.max_fields = 8;
  const auto head = dancemoe::http::scan_request_head(bytes, limits);
  if (head.verdict == dancemoe::http::HeadVerdict::kComplete) {
    if (head.head_bytes > size || head.head_bytes > limits.max_bytes) __builtin_trap();
    if (head.expect_continue &&
        (head.expect_begin >= head.expect_end || head.expect_end > head.head_bytes)) {
      __builtin_trap();
    }
  }
  if (dancemoe::check_json_nesting(bytes, "fuzz", 16).is_ok()) {
    const nlohmann::json value = nlohmann::json::parse(bytes, nullptr, false);
    if (dancemoe::json_preview(value, 40).size() > 40) __builtin_trap();
  }
  return 0;
}
