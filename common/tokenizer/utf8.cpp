#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

struct LeadInfo {
  size_t length;  // 0: not a valid lead byte
  uint8_t second_lo;
  uint8_t second_hi;
};

// Unicode Table 3-7 (well-formed UTF-8 byte sequences): the lead byte fixes
// the length and the allowed range of the second byte; later bytes are 80..BF.
LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Number of bytes at text[pos] that are a prefix of a well-formed sequence,
// and the length that sequence must have.
struct PrefixScan {
  size_t matched;
  size_t needed;
};

PrefixScan scan_prefix(std::string_view text, size_t pos) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  const LeadInfo info = lead_info(lead);
  if (info.length == 0) return {0, 1};
  size_t matched = 1;
  while (matched < info.length && pos + matched < text.size()) {
    const auto b = static_cast<uint8_t>(text[pos + matched]);
    const uint8_t lo = matched == 1 ? info.second_lo : 0x80;
    const uint8_t hi = matched == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) break;
    ++matched;
  }
  return {matched, info.length};
}

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t pos) {
  const PrefixScan scan = scan_prefix(text, pos);
  return scan.matched == scan.needed ? scan.needed : 0;
}

char32_t utf8_decode_at(std::string_view text, size_t pos, size_t length) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  if (length == 1) return b0;
  char32_t cp = b0 & (0xFF >> (length + 1));
  for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
  return cp;
}

size_t utf8_maximal_subpart(std::string_view text, size_t pos) {
  const PrefixScan scan = scan_prefix(text, pos);
  return scan.matched == 0 ? 1 : scan.matched;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool utf8_is_valid(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t length = utf8_sequence_length(text, pos);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

std::string utf8_make_valid(std::string_view text) {
  if (utf8_is_valid(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t length = utf8_sequence_length(text, pos);
    if (length > 0) {
      out.append(text.substr(pos, length));
      pos += length;
    } else {
      utf8_append(out, kReplacementChar);
      pos += utf8_maximal_subpart(text, pos);
    }
  }
  return out;
}

bool is_white_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool utf8_ends_with_replacement(std::string_view text) {
  return text.size() >= 3 && text.substr(text.size() - 3) == "\xEF\xBF\xBD";
}

}  // namespace dancemoe::tokenizer
