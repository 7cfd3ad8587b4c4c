#include "common/jinja/render_state.h"

namespace dancemoe::jinja {

RenderState::~RenderState() {
  // A namespace may hold itself (directly or through a list): clearing what
  // is still alive breaks such cycles, which would otherwise leak.
  for (const std::weak_ptr<Namespace>& weak : namespaces_) {
    if (std::shared_ptr<Namespace> ns = weak.lock()) ns->attributes = ValueDict();
  }
}

void RenderState::check_string(size_t bytes, SourceLocation where) {
  if (bytes > limits_.max_output_bytes) {
    fail(where, "a string of " + std::to_string(bytes) + " bytes is over the render's limit of " +
                    std::to_string(limits_.max_output_bytes));
  }
  step(where, static_cast<int64_t>(bytes / 16));
}

void RenderState::check_list(size_t items, SourceLocation where) {
  if (items > limits_.max_output_bytes) {
    fail(where, "a list of " + std::to_string(items) + " items is over the render's limit of " +
                    std::to_string(limits_.max_output_bytes));
  }
  step(where, static_cast<int64_t>(items));
}

std::shared_ptr<Namespace> RenderState::new_namespace() {
  auto ns = std::make_shared<Namespace>();
  namespaces_.push_back(ns);
  return ns;
}

}  // namespace dancemoe::jinja
