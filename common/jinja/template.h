// Template: a Jinja template as HuggingFace transformers renders chat
// templates (jinja2's ImmutableSandboxedEnvironment with trim_blocks and
// lstrip_blocks, the loopcontrols extension, and HF's tojson,
// raise_exception and strftime_now), implemented here: Debian 12 packages
// no C++ Jinja library. docs/chat_templates.md lists the subset supported;
// the pieces are lexer.h, parser.h, interpreter.h and the built-ins
// (filters.h, is_tests.h, methods.h, builtins.h) over value.h.
//
// A template and what it renders are both untrusted (a model file, a client's
// messages): parsing and rendering fail with invalid_argument -- naming the
// line, column and construct -- rather than crash, loop forever or grow
// without bound (RenderLimits, render_state.h; sources at most
// kMaxSourceBytes, nesting at most kMaxNesting).
//
// Immutable after parse(); render() is const and thread-safe (each render
// has its own state), so one Template serves concurrent requests.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/jinja/ast.h"
#include "common/jinja/render_state.h"

namespace dancemoe::jinja {

inline constexpr size_t kMaxSourceBytes = size_t{1} << 20;

struct RenderOptions {
  RenderLimits limits;
  // What strftime_now() formats (in local time).
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

class Template {
 public:
  // Unknown filters and tests are errors here, as jinja2 reports them when it
  // compiles a template.
  static Result<Template> parse(std::string_view source);

  // `variables` is a JSON object: its members are the template's variables
  // (messages, tools, add_generation_prompt, bos_token, ...). A failure of
  // the template's own raise_exception(msg) has the message `msg` as written;
  // any other failure "line L, column C: what went wrong".
  Result<std::string> render(const nlohmann::ordered_json& variables,
                             const RenderOptions& options = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

// `json` as HF's tojson filter writes it (Python's json.dumps: ", " and ": "
// separators, keys in order, non-ASCII kept). Fails only past kMaxValueDepth.
Result<std::string> to_python_json(const nlohmann::ordered_json& json);

}  // namespace dancemoe::jinja
