#include "common/jinja/text.h"

#include <algorithm>

namespace dancemoe::jinja {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t pos = 0; pos < s.size();) out.push_back(utf8_next(s, pos));
  return out;
}

bool in_set(uint32_t cp, const std::optional<std::vector<uint32_t>>& set) {
  if (!set) return is_space(cp);
  return std::find(set->begin(), set->end(), cp) != set->end();
}

// Byte ranges of the whitespace-separated words of s.
std::vector<std::pair<size_t, size_t>> words(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    uint32_t cp = utf8_next(s, pos);
    if (is_space(cp)) continue;
    size_t end = pos;
    while (pos < s.size()) {
      size_t before = pos;
      if (is_space(utf8_next(s, pos))) {
        pos = before;
        break;
      }
      end = pos;
    }
    out.emplace_back(start, end);
  }
  return out;
}

}  // namespace

bool utf8_valid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size() || !is_continuation(static_cast<unsigned char>(s[i + k]))) return false;
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += is_continuation(static_cast<unsigned char>(c)) ? 0 : 1;
  return n;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    if (!is_continuation(static_cast<unsigned char>(s[i]))) out.push_back(i);
  }
  out.push_back(s.size());
  return out;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t utf8_next(std::string_view s, size_t& pos) {
  const auto c = static_cast<unsigned char>(s[pos++]);
  if (c < 0x80) return c;
  size_t n = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : 3;
  uint32_t cp = c & (n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07);
  for (size_t k = 0; k < n && pos < s.size(); ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(s[pos++]) & 0x3F);
  }
  return cp;
}

bool is_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  std::optional<std::vector<uint32_t>> set;
  if (chars) set = code_points(*chars);
  const std::vector<size_t> offsets = utf8_offsets(s);
  size_t begin = 0;
  size_t end = offsets.size() - 1;  // in code points
  auto cp_at = [&](size_t k) {
    size_t pos = offsets[k];
    return utf8_next(s, pos);
  };
  if (left) {
    while (begin < end && in_set(cp_at(begin), set)) ++begin;
  }
  if (right) {
    while (end > begin && in_set(cp_at(end - 1), set)) --end;
  }
  return std::string(s.substr(offsets[begin], offsets[end] - offsets[begin]));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t max_split) {
  std::vector<std::string> out;
  if (!sep) {
    const auto ranges = words(s);
    for (size_t k = 0; k < ranges.size(); ++k) {
      if (max_split >= 0 && static_cast<int64_t>(k) == max_split) {
        // The rest, from this word on, with its trailing whitespace kept.
        out.emplace_back(s.substr(ranges[k].first));
        return out;
      }
      out.emplace_back(s.substr(ranges[k].first, ranges[k].second - ranges[k].first));
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (max_split < 0 || n < max_split) {
    const size_t hit = s.find(*sep, start);
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(start, hit - start));
    start = hit + sep->size();
    ++n;
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t max_split) {
  std::vector<std::string> out;
  if (!sep) {
    const auto ranges = words(s);
    const size_t n = ranges.size();
    for (size_t k = 0; k < n; ++k) {
      const size_t idx = n - 1 - k;
      if (max_split >= 0 && static_cast<int64_t>(k) == max_split) {
        out.emplace_back(s.substr(0, ranges[idx].second));
        break;
      }
      out.emplace_back(s.substr(ranges[idx].first, ranges[idx].second - ranges[idx].first));
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  size_t end = s.size();
  int64_t n = 0;
  while (max_split < 0 || n < max_split) {
    if (end < sep->size()) break;
    const size_t hit = s.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
    ++n;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement,
                       int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement between every code point and at both ends.
    const std::vector<size_t> offsets = utf8_offsets(s);  // n code points + the end
    int64_t done = 0;
    for (size_t k = 0; k < offsets.size(); ++k) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (k + 1 < offsets.size()) out += s.substr(offsets[k], offsets[k + 1] - offsets[k]);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += replacement;
    start = hit + old.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string ascii_title(std::string_view s) {
  std::string out(s);
  bool in_word = false;
  for (char& c : out) {
    const bool lower = c >= 'a' && c <= 'z';
    const bool upper = c >= 'A' && c <= 'Z';
    if (lower || upper) {
      if (!in_word && lower) c = static_cast<char>(c - 'a' + 'A');
      if (in_word && upper) c = static_cast<char>(c - 'A' + 'a');
      in_word = true;
    } else {
      in_word = false;
    }
  }
  return out;
}

std::string ascii_capitalize(std::string_view s) {
  std::string out = ascii_lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z')
    out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

}  // namespace dancemoe::jinja
