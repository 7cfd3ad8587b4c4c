#include "common/jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "common/jinja/text.h"

namespace dancemoe::jinja {
namespace {

enum class TagKind { kExpr, kStmt, kComment };

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's str.rstrip() / lstrip() for the whitespace control marks.
std::string_view rstrip_space(std::string_view s) {
  const std::vector<size_t> offsets = utf8_offsets(s);
  size_t k = offsets.size() - 1;
  while (k > 0) {
    size_t pos = offsets[k - 1];
    if (!is_space(utf8_next(s, pos))) break;
    --k;
  }
  return s.substr(0, offsets[k]);
}

size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    size_t next = pos;
    if (!is_space(utf8_next(s, next))) break;
    pos = next;
  }
  return pos;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      const size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_text(std::string_view(src_).substr(pos), pos);
        break;
      }
      const char type = src_[tag + 1];
      const TagKind kind = type == '{'   ? TagKind::kExpr
                           : type == '%' ? TagKind::kStmt
                                         : TagKind::kComment;
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      std::string_view text = std::string_view(src_).substr(pos, tag - pos);
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+' && kind != TagKind::kExpr) {
        // lstrip_blocks: drop the indentation of a line that holds only the tag.
        const size_t line_pos =
            text.rfind('\n') == std::string_view::npos ? 0 : text.rfind('\n') + 1;
        if ((line_pos > 0 || line_starting) && line_pos < text.size() &&
            skip_space(text, line_pos) == text.size()) {
          text = text.substr(0, line_pos);
        }
      }
      emit_text(text, pos);
      size_t inner = tag + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      if (kind == TagKind::kComment) {
        pos = lex_comment_end(tag, inner);
      } else if (const size_t raw = raw_block(kind, tag, inner); raw != std::string::npos) {
        pos = raw;
      } else {
        pos = lex_tag(kind, tag, inner);
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    Token end;
    end.kind = TokenKind::kEnd;
    end.where = location(src_.size());
    tokens_.push_back(std::move(end));
    return std::move(tokens_);
  }

 private:
  SourceLocation location(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  size_t find_tag(size_t pos) const {
    while (true) {
      pos = src_.find('{', pos);
      if (pos == std::string::npos || pos + 1 >= src_.size()) return std::string::npos;
      const char next = src_[pos + 1];
      if (next == '{' || next == '%' || next == '#') return pos;
      ++pos;
    }
  }

  void emit_text(std::string_view text, size_t offset) {
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::kText;
    t.text = std::string(text);
    t.where = location(offset);
    tokens_.push_back(std::move(t));
  }

  void emit(TokenKind kind, size_t offset, std::string text = {}) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.where = location(offset);
    tokens_.push_back(std::move(t));
  }

  // After `-` marks: all following whitespace; after a plain `%}` / `#}`
  // (trim_blocks): one newline.
  size_t after_end(size_t pos, char sign, bool block) const {
    if (sign == '-') return skip_space(src_, pos);
    if (sign != '+' && block && pos < src_.size() && src_[pos] == '\n') return pos + 1;
    return pos;
  }

  // `{% raw %}...{% endraw %}`: the text between is output as it is. Returns
  // the position after the block, or npos when the tag is not `raw`.
  size_t raw_block(TagKind kind, size_t tag, size_t pos) {
    if (kind != TagKind::kStmt) return std::string::npos;
    pos = skip_space(src_, pos);
    if (src_.compare(pos, 3, "raw") != 0 ||
        (pos + 3 < src_.size() && is_name_char(src_[pos + 3]))) {
      return std::string::npos;
    }
    pos = skip_space(src_, pos + 3);
    if (src_.compare(pos, 3, "-%}") == 0) {
      pos = skip_space(src_, pos + 3);
    } else if (src_.compare(pos, 2, "%}") == 0) {
      pos += 2;
    } else {
      return std::string::npos;  // the parser reports what follows `raw`
    }
    for (size_t at = src_.find("{%", pos); at != std::string::npos; at = src_.find("{%", at + 2)) {
      const char sign = at + 2 < src_.size() ? src_[at + 2] : '\0';
      size_t p = skip_space(src_, at + 2 + (sign == '-' || sign == '+' ? 1 : 0));
      if (src_.compare(p, 6, "endraw") != 0) continue;
      p = skip_space(src_, p + 6);
      const char end_sign = src_[p] == '-' || src_[p] == '+' ? src_[p] : '\0';
      if (src_.compare(p + (end_sign ? 1 : 0), 2, "%}") != 0) continue;
      std::string_view text = std::string_view(src_).substr(pos, at - pos);
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+') {
        const size_t nl = text.rfind('\n');
        const size_t line_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if (line_pos > 0 && line_pos < text.size() && skip_space(text, line_pos) == text.size()) {
          text = text.substr(0, line_pos);
        }
      }
      emit_text(text, pos);
      return after_end(p + (end_sign ? 3 : 2), end_sign, true);
    }
    fail(location(tag), "the 'raw' tag is never closed (expected {% endraw %})");
  }

  size_t lex_comment_end(size_t tag, size_t pos) {
    const size_t end = src_.find("#}", pos);
    if (end == std::string::npos) fail(location(tag), "missing end of comment tag '#}'");
    const char before = end > pos ? src_[end - 1] : '\0';
    return after_end(end + 2, before == '-' || before == '+' ? before : '\0', true);
  }

  // Returns the end of the tag (after any whitespace its end consumes).
  size_t lex_tag(TagKind kind, size_t tag, size_t pos) {
    const bool expr = kind == TagKind::kExpr;
    emit(expr ? TokenKind::kExprBegin : TokenKind::kStmtBegin, tag);
    const std::string_view close = expr ? "}}" : "%}";
    std::vector<char> brackets;
    while (true) {
      while (pos < src_.size() && is_ascii_space(src_[pos])) ++pos;
      if (pos >= src_.size()) {
        fail(location(tag), std::string("missing end of tag '") + std::string(close) + "'");
      }
      if (brackets.empty()) {
        const char sign = src_[pos];
        if ((sign == '-' || (sign == '+' && !expr)) && src_.compare(pos + 1, 2, close) == 0) {
          emit(expr ? TokenKind::kExprEnd : TokenKind::kStmtEnd, pos);
          return after_end(pos + 3, sign, !expr);
        }
        if (src_.compare(pos, 2, close) == 0) {
          emit(expr ? TokenKind::kExprEnd : TokenKind::kStmtEnd, pos);
          return after_end(pos + 2, '\0', !expr);
        }
      }
      pos = lex_one(pos, brackets);
    }
  }

  size_t lex_one(size_t pos, std::vector<char>& brackets) {
    const char c = src_[pos];
    if (is_digit(c)) return lex_number(pos);
    if (is_name_start(c)) {
      size_t end = pos;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      emit(TokenKind::kName, pos, src_.substr(pos, end - pos));
      return end;
    }
    if (c == '\'' || c == '"') return lex_string(pos);
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (src_.compare(pos, 2, op) == 0) {
        emit(TokenKind::kOperator, pos, std::string(op));
        return pos + 2;
      }
    }
    static constexpr std::string_view kOne = "+-*/%~()[]{}<>=.:|,";
    if (kOne.find(c) == std::string_view::npos) {
      fail(location(pos), std::string("unexpected character '") + c + "' in a tag");
    }
    if (c == '(' || c == '[' || c == '{') {
      brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) fail(location(pos), std::string("unexpected '") + c + "'");
      if (brackets.back() != c) {
        fail(location(pos),
             std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
      }
      brackets.pop_back();
    }
    emit(TokenKind::kOperator, pos, std::string(1, c));
    return pos + 1;
  }

  size_t lex_number(size_t start) {
    size_t pos = start;
    auto digits = [&] {
      while (pos < src_.size() &&
             (is_digit(src_[pos]) ||
              (src_[pos] == '_' && pos + 1 < src_.size() && is_digit(src_[pos + 1])))) {
        ++pos;
      }
    };
    digits();
    bool is_float = false;
    if (pos + 1 < src_.size() && src_[pos] == '.' && is_digit(src_[pos + 1])) {
      is_float = true;
      ++pos;
      digits();
    }
    if (pos < src_.size() && (src_[pos] == 'e' || src_[pos] == 'E')) {
      size_t exp = pos + 1;
      if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
      if (exp < src_.size() && is_digit(src_[exp])) {
        is_float = true;
        pos = exp;
        digits();
      }
    }
    std::string text = src_.substr(start, pos - start);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    Token t;
    t.where = location(start);
    errno = 0;
    if (is_float) {
      t.kind = TokenKind::kFloat;
      t.number = std::strtod(text.c_str(), nullptr);
    } else {
      t.kind = TokenKind::kInteger;
      t.integer = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(t.where, "integer literal " + text + " does not fit 64 bits");
    }
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
    return pos;
  }

  size_t lex_string(size_t start) {
    const char quote = src_[start];
    std::string value;
    size_t pos = start + 1;
    while (true) {
      if (pos >= src_.size()) fail(location(start), "unterminated string literal");
      const char c = src_[pos];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++pos;
        continue;
      }
      if (pos + 1 >= src_.size()) fail(location(start), "unterminated string literal");
      pos = unescape(pos, value);
    }
    emit(TokenKind::kString, start, std::move(value));
    return pos + 1;
  }

  // `pos` is at a backslash; appends the escaped character, returns the
  // position after the escape. Python's rules ("unicode-escape").
  size_t unescape(size_t pos, std::string& out) {
    const char e = src_[pos + 1];
    switch (e) {
      case '\n':
        return pos + 2;  // a line continuation
      case '\\':
      case '\'':
      case '"':
        out += e;
        return pos + 2;
      case 'n':
        out += '\n';
        return pos + 2;
      case 't':
        out += '\t';
        return pos + 2;
      case 'r':
        out += '\r';
        return pos + 2;
      case 'a':
        out += '\a';
        return pos + 2;
      case 'b':
        out += '\b';
        return pos + 2;
      case 'f':
        out += '\f';
        return pos + 2;
      case 'v':
        out += '\v';
        return pos + 2;
      case 'x':
        return hex_escape(pos, 2, out);
      case 'u':
        return hex_escape(pos, 4, out);
      case 'U':
        return hex_escape(pos, 8, out);
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t cp = 0;
      size_t p = pos + 1;
      for (int n = 0; n < 3 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++n, ++p) {
        cp = cp * 8 + static_cast<uint32_t>(src_[p] - '0');
      }
      utf8_append(out, cp);
      return p;
    }
    out += '\\';  // Python keeps an unknown escape as it is
    return pos + 1;
  }

  size_t hex_escape(size_t pos, int n, std::string& out) {
    uint32_t cp = 0;
    for (int i = 0; i < n; ++i) {
      const size_t p = pos + 2 + static_cast<size_t>(i);
      const int v = p < src_.size() ? hex_value(src_[p]) : -1;
      if (v < 0) {
        fail(location(pos),
             std::string("truncated \\") + src_[pos + 1] + " escape in a string literal");
      }
      cp = cp * 16 + static_cast<uint32_t>(v);
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      fail(location(pos), "string literal escape is not a Unicode scalar value");
    }
    utf8_append(out, cp);
    return pos + 2 + static_cast<size_t>(n);
  }

  std::string src_;
  std::vector<size_t> line_starts_{0};
  std::vector<Token> tokens_;
};

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  if (!utf8_valid(source)) fail({}, "template source is not valid UTF-8");
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace dancemoe::jinja
