// Rendering helpers for the Jinja interpreter's tests.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "common/jinja/template.h"

namespace dancemoe::jinja::testing {

// The rendering of `source` with `variables`, or "ERROR: <message>".
inline std::string render(
    const std::string& source,
    const nlohmann::ordered_json& variables = nlohmann::ordered_json::object(),
    const RenderOptions& options = {}) {
  Result<Template> t = Template::parse(source);
  if (!t.is_ok()) return "ERROR: " + t.status().message();
  Result<std::string> out = t->render(variables, options);
  return out.is_ok() ? *out : "ERROR: " + out.status().message();
}

}  // namespace dancemoe::jinja::testing
