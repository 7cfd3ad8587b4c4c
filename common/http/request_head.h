// RequestHead: what an HTTP/1.1 server front needs to know about a request
// before any handler thread sees it -- where its head ends, whether the head
// keeps the limits (bytes, number of fields), how long its body is, and
// whether the client waits for "100 Continue". Used by ConnectionGate
// (connection_gate.h), which reads whole requests on one thread so that slow
// clients never hold a handler thread; cpp-httplib parses the head again for
// routing.
//
// Only what framing needs is parsed: the request line's shape, field syntax,
// Content-Length (digits, equal when repeated), Transfer-Encoding (any value
// is refused by the gate: request bodies must have a length) and Expect.
// Pure functions over bytes from a socket: a fuzz target covers them
// (tests/fuzz/request_head_fuzz.cpp). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dancemoe::http {

struct RequestHeadLimits {
  size_t max_bytes = 32 << 10;  // request line + fields + the blank line
  size_t max_fields = 100;
};

enum class HeadVerdict {
  kIncomplete,           // no blank line yet, and within max_bytes
  kComplete,             // head_bytes, content_length, ... are set
  kTooLarge,             // max_bytes reached without the end of the head (431)
  kTooManyFields,        // more than max_fields fields (431)
  kMalformed,            // not an HTTP/1.x request head (400): `problem` says why
  kHasTransferEncoding,  // a body without a length (411)
};

struct RequestHead {
  HeadVerdict verdict = HeadVerdict::kIncomplete;
  size_t head_bytes = 0;  // through the blank line
  uint64_t content_length = 0;
  bool expect_continue = false;
  // The "Expect: 100-continue" line, [expect_begin, expect_end) of the head,
  // so the gate (which answers 100 itself) can remove it.
  size_t expect_begin = 0;
  size_t expect_end = 0;
  std::string problem;  // kMalformed: what is wrong, for the 400's message
};

// Offset just past the first "\r\n\r\n" at or after `from` (callers that
// append pass the previous size minus 3), or npos.
size_t find_head_end(std::string_view buffer, size_t from = 0);

// Judges the head at the start of `buffer` (bytes received so far).
RequestHead scan_request_head(std::string_view buffer, const RequestHeadLimits& limits);

}  // namespace dancemoe::http
