#include "common/http/request_head.h"

#include <strings.h>

namespace dancemoe::http {
namespace {

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_token_char(char c) {
  // RFC 9110 tchar
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

RequestHead malformed(std::string problem) {
  RequestHead head;
  head.verdict = HeadVerdict::kMalformed;
  head.problem = std::move(problem);
  return head;
}

// "METHOD SP TARGET SP HTTP/1.x"
bool valid_request_line(std::string_view line) {
  const size_t first = line.find(' ');
  if (first == std::string_view::npos || first == 0) return false;
  for (size_t i = 0; i < first; ++i) {
    if (!is_token_char(line[i])) return false;
  }
  const size_t second = line.find(' ', first + 1);
  if (second == std::string_view::npos || second == first + 1) return false;
  const std::string_view version = line.substr(second + 1);
  return version == "HTTP/1.1" || version == "HTTP/1.0";
}

}  // namespace

size_t find_head_end(std::string_view buffer, size_t from) {
  const size_t at = buffer.find("\r\n\r\n", from);
  return at == std::string_view::npos ? std::string_view::npos : at + 4;
}

RequestHead scan_request_head(std::string_view buffer, const RequestHeadLimits& limits) {
  const size_t end = find_head_end(buffer);
  if (end == std::string_view::npos || end > limits.max_bytes) {
    RequestHead head;
    head.verdict = buffer.size() >= limits.max_bytes || end != std::string_view::npos
                       ? HeadVerdict::kTooLarge
                       : HeadVerdict::kIncomplete;
    return head;
  }
  RequestHead head;
  head.head_bytes = end;
  const std::string_view text = buffer.substr(0, end - 2);  // each line ends in \r\n
  size_t pos = text.find("\r\n");
  if (!valid_request_line(text.substr(0, pos))) {
    return malformed("the request line is not 'METHOD TARGET HTTP/1.1'");
  }
  pos += 2;
  size_t n_fields = 0;
  bool has_length = false;
  while (pos < text.size()) {
    const size_t eol = text.find("\r\n", pos);
    const std::string_view line = text.substr(pos, eol - pos);
    const size_t line_begin = pos;
    pos = eol + 2;
    if (++n_fields > limits.max_fields) {
      RequestHead too_many;
      too_many.verdict = HeadVerdict::kTooManyFields;
      return too_many;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return malformed("a header line has no 'Name:'");
    }
    const std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (!is_token_char(c)) return malformed("a header name has a character not allowed there");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (equals_ignore_case(name, "Content-Length")) {
      if (value.empty() || value.size() > 18) return malformed("Content-Length is not a number");
      uint64_t length = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return malformed("Content-Length is not a number");
        length = length * 10 + static_cast<uint64_t>(c - '0');
      }
      if (has_length && length != head.content_length) {
        return malformed("two different Content-Length values");
      }
      has_length = true;
      head.content_length = length;
    } else if (equals_ignore_case(name, "Transfer-Encoding")) {
      head.verdict = HeadVerdict::kHasTransferEncoding;
    } else if (equals_ignore_case(name, "Expect") && equals_ignore_case(value, "100-continue")) {
      head.expect_continue = true;
      head.expect_begin = line_begin;
      head.expect_end = pos;
    }
  }
  if (head.verdict == HeadVerdict::kIncomplete) head.verdict = HeadVerdict::kComplete;
  return head;
}

}  // namespace dancemoe::http
