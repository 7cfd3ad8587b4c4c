// TemplateError: how a failure unwinds inside the Jinja interpreter (lexer,
// parser, evaluator) up to the public entry points of template.h, which turn
// it into a Status. Every expression of a template can fail (a missing
// attribute, a type error, raise_exception, a limit), and threading a Result
// through each of the evaluator's many small functions would bury what they
// compute; so, inside common/jinja only, failures are thrown. Nothing else
// in the project sees this type.
#pragma once

#include <stdexcept>
#include <string>

namespace dancemoe::jinja {

// 1-based position in the template source; 0 when unknown.
struct SourceLocation {
  int line = 0;
  int column = 0;
};

class TemplateError : public std::runtime_error {
 public:
  // `raised` marks the template's own raise_exception(message).
  TemplateError(SourceLocation where, const std::string& message, bool raised = false)
      : std::runtime_error(message), where_(where), raised_(raised) {}

  SourceLocation where() const { return where_; }
  bool raised() const { return raised_; }

 private:
  SourceLocation where_;
  bool raised_;
};

[[noreturn]] inline void fail(SourceLocation where, const std::string& message) {
  throw TemplateError(where, message);
}

}  // namespace dancemoe::jinja
