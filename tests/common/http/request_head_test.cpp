#include "common/http/request_head.h"

#include <doctest/doctest.h>

#include <string>

namespace dancemoe::http {

TEST_CASE("request head: incomplete until the blank line, then framed by Content-Length") {
  const RequestHeadLimits limits;
  CHECK(scan_request_head("POST /v1 HTTP/1.1\r\nHost: x\r\n", limits).verdict ==
        HeadVerdict::kIncomplete);
  const std::string text = "POST /v1 HTTP/1.1\r\nHost: x\r\ncontent-length:  12 \r\n\r\n{\"a\": 1}";
  const RequestHead head = scan_request_head(text, limits);
  REQUIRE(head.verdict == HeadVerdict::kComplete);
  CHECK(head.head_bytes == text.find('{'));
  CHECK(head.content_length == 12);
  CHECK_FALSE(head.expect_continue);
  CHECK(find_head_end(text) == head.head_bytes);
  CHECK(find_head_end(text, head.head_bytes - 4) == head.head_bytes);
  CHECK(find_head_end(text, head.head_bytes - 3) == std::string::npos);
}

TEST_CASE("request head: too many bytes or fields are told apart from incomplete") {
  RequestHeadLimits limits;
  limits.max_bytes = 64;
  limits.max_fields = 2;
  CHECK(scan_request_head("GET / HTTP/1.1\r\nA: " + std::string(60, 'x'), limits).verdict ==
        HeadVerdict::kTooLarge);
  CHECK(scan_request_head("GET / HTTP/1.1\r\nA: " + std::string(60, 'x') + "\r\n\r\n", limits)
            .verdict == HeadVerdict::kTooLarge);
  CHECK(scan_request_head("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits).verdict ==
        HeadVerdict::kTooManyFields);
  CHECK(scan_request_head("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", limits).verdict ==
        HeadVerdict::kComplete);
}

TEST_CASE("request head: malformed lines, lengths and transfer codings are named") {
  const RequestHeadLimits limits;
  auto verdict = [&](const std::string& text) { return scan_request_head(text, limits).verdict; };
  CHECK(verdict("GET /\r\n\r\n") == HeadVerdict::kMalformed);
  CHECK(verdict("GET / HTTP/2.0\r\n\r\n") == HeadVerdict::kMalformed);
  CHECK(verdict("G(T / HTTP/1.1\r\n\r\n") == HeadVerdict::kMalformed);
  CHECK(verdict("GET / HTTP/1.1\r\nno colon\r\n\r\n") == HeadVerdict::kMalformed);
  CHECK(verdict("GET / HTTP/1.1\r\n folded: x\r\n\r\n") == HeadVerdict::kMalformed);
  CHECK(verdict("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n") == HeadVerdict::kMalformed);
  CHECK(verdict("GET / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n") ==
        HeadVerdict::kMalformed);
  const RequestHead two =
      scan_request_head("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", limits);
  CHECK(two.verdict == HeadVerdict::kMalformed);
  CHECK(two.problem == "two different Content-Length values");
  CHECK(verdict("GET / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n") ==
        HeadVerdict::kComplete);
  CHECK(verdict("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") ==
        HeadVerdict::kHasTransferEncoding);
}

TEST_CASE("request head: Expect: 100-continue is found with its line's bounds") {
  const std::string text = "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n";
  const RequestHead head = scan_request_head(text, {});
  REQUIRE(head.verdict == HeadVerdict::kComplete);
  CHECK(head.expect_continue);
  CHECK(text.substr(head.expect_begin, head.expect_end - head.expect_begin) ==
        "Expect: 100-Continue\r\n");
}

}  // namespace dancemoe::http
