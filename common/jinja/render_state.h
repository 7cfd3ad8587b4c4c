// RenderState: the budget of one render, shared by the interpreter and the
// filters, tests and methods it calls. A template is data (a model file may
// hold anything) and so is what it renders (client messages), so every
// render is bounded:
//   - steps: each statement, expression, loop iteration and list element
//     built costs one, each 16 bytes of a string built one more; past
//     max_steps the render fails (no endless or quadratic loops);
//   - size: the output, and any one string or list built, at most
//     max_output_bytes (bytes, or elements for a list);
//   - depth: macro calls nest at most max_call_depth deep (recursive macros);
//     values nest at most kMaxValueDepth (value.h), the syntax tree
//     kMaxNesting (parser.h).
// It also carries the clock strftime_now() reads and the namespaces the
// render created (so their reference cycles, `set ns.me = ns`, can be broken
// when it ends). One per render; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/jinja/template_error.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{32} << 20;
  int max_call_depth = 32;
  int64_t max_steps = 10'000'000;
};

class RenderState {
 public:
  RenderState(RenderLimits limits, std::chrono::system_clock::time_point now)
      : limits_(limits), now_(now) {}
  ~RenderState();
  RenderState(const RenderState&) = delete;
  RenderState& operator=(const RenderState&) = delete;

  const RenderLimits& limits() const { return limits_; }
  std::chrono::system_clock::time_point now() const { return now_; }

  // Spends `n` steps; fails past the budget.
  void step(SourceLocation where, int64_t n = 1) {
    steps_ += n;
    if (steps_ > limits_.max_steps) {
      fail(where, "template render exceeded its budget of " + std::to_string(limits_.max_steps) +
                      " steps");
    }
  }
  // Before building a string of `bytes` / a list of `items`.
  void check_string(size_t bytes, SourceLocation where);
  void check_list(size_t items, SourceLocation where);

  std::shared_ptr<Namespace> new_namespace();

 private:
  RenderLimits limits_;
  std::chrono::system_clock::time_point now_;
  int64_t steps_ = 0;
  std::vector<std::weak_ptr<Namespace>> namespaces_;
};

}  // namespace dancemoe::jinja
