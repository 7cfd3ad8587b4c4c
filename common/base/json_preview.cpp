#include "common/base/json_preview.h"

#include <vector>

namespace dancemoe {
namespace {

// Appends `text` until `out` holds `limit` characters; false once full.
bool put(std::string& out, const std::string& text, size_t limit) {
  if (out.size() >= limit) return false;
  out.append(text, 0, limit - out.size());
  return out.size() < limit;
}

template <typename Json>
std::string scalar_text(const Json& value, size_t limit) {
  if (value.is_string()) {
    // Cut a long string before escaping it: only its start is shown.
    const std::string& s = value.template get_ref<const std::string&>();
    return Json(s.substr(0, limit)).dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);  // a scalar: no recursion
}

template <typename Json>
std::string preview(const Json& root, size_t max_chars) {
  // One frame per open array/object: the container and the next child.
  struct Frame {
    const Json* container;
    typename Json::const_iterator next;
  };
  const size_t limit = max_chars + 1;  // one more than shown: tells whether to cut
  std::string out;
  std::vector<Frame> stack;
  const Json* value = &root;
  while (true) {
    if (value != nullptr) {
      if (value->is_object() || value->is_array()) {
        if (!put(out, value->is_object() ? "{" : "[", limit)) break;
        stack.push_back({value, value->cbegin()});
      } else if (!put(out, scalar_text(*value, limit), limit)) {
        break;
      }
      value = nullptr;
    }
    if (stack.empty()) break;
    Frame& top = stack.back();
    if (top.next == top.container->cend()) {
      if (!put(out, top.container->is_object() ? "}" : "]", limit)) break;
      stack.pop_back();
      if (stack.empty()) break;
      continue;
    }
    if (top.next != top.container->cbegin() && !put(out, ",", limit)) break;
    if (top.container->is_object()) {
      if (!put(out, scalar_text(Json(top.next.key()), limit) + ":", limit)) break;
    }
    value = &*top.next;
    ++top.next;
  }
  if (out.size() > max_chars) {
    const size_t keep = max_chars > 3 ? max_chars - 3 : 0;
    out.resize(keep);
    out += "...";
  }
  return out;
}

}  // namespace

std::string json_preview(const nlohmann::json& value, size_t max_chars) {
  return preview(value, max_chars);
}

std::string json_preview(const nlohmann::ordered_json& value, size_t max_chars) {
  return preview(value, max_chars);
}

}  // namespace dancemoe
