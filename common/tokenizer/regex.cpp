#include "common/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/base/json_field.h"
#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(error_code, buffer, sizeof buffer);
  if (n < 0) return "PCRE2 error " + std::to_string(error_code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(std::string pattern, std::unique_ptr<Code> code)
    : pattern_(std::move(pattern)), code_(std::move(code)) {}
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

Result<Regex> Regex::compile(std::string_view pattern) {
  if (!utf8_is_valid(pattern)) return invalid_argument("regex pattern is not valid UTF-8");
  auto code = std::make_unique<Code>();
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code->code == nullptr) {
    return invalid_argument("cannot compile regex /" + std::string(pattern) + "/ at offset " +
                            std::to_string(error_offset) + ": " + pcre2_message(error_code));
  }
  // JIT is an optimisation only: without it (unsupported CPU, no executable
  // memory) pcre2_match runs the interpreter.
  (void)pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);
  return Regex(std::string(pattern), std::move(code));
}

Result<Regex> Regex::literal(std::string_view literal) {
  if (!utf8_is_valid(literal)) return invalid_argument("literal pattern is not valid UTF-8");
  auto code = std::make_unique<Code>();
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(literal.data()), literal.size(),
                             PCRE2_UTF | PCRE2_LITERAL, &error_code, &error_offset, nullptr);
  if (code->code == nullptr) {
    return invalid_argument("cannot compile literal pattern: " + pcre2_message(error_code));
  }
  (void)pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);
  return Regex(std::string(literal), std::move(code));
}

Result<std::vector<RegexMatch>> Regex::find_all(std::string_view subject) const {
  std::vector<RegexMatch> matches;
  MatchData data(pcre2_match_data_create_from_pattern(code_->code, nullptr));
  if (!data) return resource_exhausted("out of memory for regex match data");
  const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t start = 0;
  bool have_last_end = false;
  size_t last_end = 0;
  while (start <= subject.size()) {
    // NO_UTF_CHECK: callers pass valid UTF-8 (the pipeline sanitises input).
    int rc = pcre2_match(code_->code, bytes, subject.size(), start, PCRE2_NO_UTF_CHECK, data.get(),
                         nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // The JIT's fixed stack ran out on a long input; the interpreter keeps
      // its backtracking frames on the heap and succeeds.
      rc = pcre2_match(code_->code, bytes, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       data.get(), nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return resource_exhausted("regex /" + pattern_ + "/ failed on a " +
                                std::to_string(subject.size()) +
                                "-byte input: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (begin == end && have_last_end && end == last_end) {
      // An empty match right after the previous match is skipped, as
      // Oniguruma's find_iter does; resume one code point further.
      if (begin >= subject.size()) break;
      const size_t length = utf8_sequence_length(subject, begin);
      start = begin + (length == 0 ? 1 : length);
      continue;
    }
    matches.push_back({begin, end});
    have_last_end = true;
    last_end = end;
    if (end > begin) {
      start = end;
    } else {
      if (end >= subject.size()) break;
      const size_t length = utf8_sequence_length(subject, end);
      start = end + (length == 0 ? 1 : length);
    }
  }
  return matches;
}

Result<Regex> parse_pattern(const JsonField& field) {
  DMOE_RETURN_IF_ERROR(field.expect_object());
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> literal_field, field.optional_member("String"));
  if (literal_field) {
    DMOE_ASSIGN_OR_RETURN(std::string literal, literal_field->as_string());
    if (literal.empty()) return literal_field->error("empty pattern");
    Result<Regex> regex = Regex::literal(literal);
    if (!regex.is_ok()) return literal_field->error(regex.status().message());
    return regex;
  }
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> regex_field, field.optional_member("Regex"));
  if (regex_field) {
    DMOE_ASSIGN_OR_RETURN(std::string pattern, regex_field->as_string());
    Result<Regex> regex = Regex::compile(pattern);
    if (!regex.is_ok()) return regex_field->error(regex.status().message());
    return regex;
  }
  return field.error("expected a pattern object with a \"String\" or \"Regex\" member");
}

}  // namespace dancemoe::tokenizer
