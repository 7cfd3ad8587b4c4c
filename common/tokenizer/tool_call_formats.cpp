#include "common/tokenizer/tool_call_formats.h"

#include <functional>
#include <optional>
#include <utility>

#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// Brackets nest at most kMaxToolJsonDepth deep (outside strings).
bool nesting_ok(std::string_view s) {
  int depth = 0;
  bool in_string = false;
  bool escape = false;
  for (char c : s) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxToolJsonDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

std::optional<Json> parse_json(std::string_view text) { return parse_tool_json(text); }

// OpenAI's function.arguments: the JSON text of an object. A model that
// wrote the arguments as a JSON string holding an object is forgiven.
std::optional<std::string> arguments_text(const Json* args) {
  if (args == nullptr || args->is_null()) return "{}";
  if (args->is_object()) return args->dump();
  if (args->is_string()) {
    std::optional<Json> inner = parse_json(args->get<std::string>());
    if (inner && inner->is_object()) return inner->dump();
  }
  return std::nullopt;
}

const Json* member(const Json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// {"name": "f", "arguments": {...}} (Hermes also accepts "parameters").
bool call_from_object(const Json& j, std::vector<ToolCall>* out) {
  if (!j.is_object()) return false;
  const Json* name = member(j, "name");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) return false;
  const Json* args = member(j, "arguments");
  if (args == nullptr) args = member(j, "parameters");
  std::optional<std::string> text = arguments_text(args);
  if (!text) return false;
  ToolCall call;
  call.name = name->get<std::string>();
  call.arguments = std::move(*text);
  if (const Json* id = member(j, "id"); id != nullptr && id->is_string())
    call.id = id->get<std::string>();
  out->push_back(std::move(call));
  return true;
}

bool parse_hermes(std::string_view body, std::vector<ToolCall>* out) {
  std::optional<Json> j = parse_json(body);
  return j && call_from_object(*j, out);
}

// [{"name", "arguments", "id"}, ...], one object, or name[CALL_ID]id[ARGS]{...}.
bool parse_mistral(std::string_view body, std::vector<ToolCall>* out) {
  body = trim(body);
  if (!body.empty() && (body.front() == '[' || body.front() == '{')) {
    std::optional<Json> j = parse_json(body);
    if (!j) return false;
    if (j->is_object()) return call_from_object(*j, out);
    if (!j->is_array() || j->empty()) return false;
    std::vector<ToolCall> calls;
    for (const Json& item : *j) {
      if (!call_from_object(item, &calls)) return false;
    }
    out->insert(out->end(), calls.begin(), calls.end());
    return true;
  }
  const size_t args_at = body.find("[ARGS]");
  if (args_at == std::string_view::npos) return false;
  std::string_view head = body.substr(0, args_at);
  ToolCall call;
  if (const size_t id_at = head.find("[CALL_ID]"); id_at != std::string_view::npos) {
    call.id = std::string(trim(head.substr(id_at + 9)));
    head = head.substr(0, id_at);
  }
  call.name = std::string(trim(head));
  std::optional<Json> args = parse_json(body.substr(args_at + 6));
  if (call.name.empty() || !args || !args->is_object()) return false;
  call.arguments = args->dump();
  out->push_back(std::move(call));
  return true;
}

// V3.1: name<｜tool▁sep｜>{args}; V3/R1: type<｜tool▁sep｜>name\n```json\n{args}\n```
bool parse_deepseek(std::string_view body, std::vector<ToolCall>* out) {
  static constexpr std::string_view kSep = "<｜tool▁sep｜>";
  const size_t sep = body.find(kSep);
  if (sep == std::string_view::npos) return false;
  std::string_view left = trim(body.substr(0, sep));
  std::string_view right = body.substr(sep + kSep.size());
  ToolCall call;
  std::string_view args = right;
  if (const size_t fence = right.find("```json"); fence != std::string_view::npos) {
    call.name = std::string(trim(right.substr(0, fence)));
    args = right.substr(fence + 7);
    if (const size_t close = args.rfind("```"); close != std::string_view::npos)
      args = args.substr(0, close);
  } else {
    call.name = std::string(left);
  }
  std::optional<Json> j = parse_json(args);
  if (call.name.empty() || !j || !j->is_object()) return false;
  call.arguments = j->dump();
  out->push_back(std::move(call));
  return true;
}

// The JSON schema type of a tool's parameter, or "" when unknown.
std::string parameter_type(const Json& tools, const std::string& function,
                           const std::string& param) {
  if (!tools.is_array()) return "";
  for (const Json& tool : tools) {
    if (!tool.is_object()) continue;
    const Json* fn = member(tool, "function");
    const Json& def = fn != nullptr && fn->is_object() ? *fn : tool;
    const Json* name = member(def, "name");
    if (name == nullptr || !name->is_string() || name->get<std::string>() != function) continue;
    const Json* params = member(def, "parameters");
    if (params == nullptr || !params->is_object()) return "";
    const Json* props = member(*params, "properties");
    if (props == nullptr || !props->is_object()) return "";
    const Json* prop = member(*props, param.c_str());
    if (prop == nullptr || !prop->is_object()) return "";
    const Json* type = member(*prop, "type");
    return type != nullptr && type->is_string() ? type->get<std::string>() : "";
  }
  return "";
}

// f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>... (GLM-4.5).
bool parse_glm(std::string_view body, const Json& tools, std::vector<ToolCall>* out) {
  static constexpr std::string_view kKey = "<arg_key>";
  static constexpr std::string_view kKeyEnd = "</arg_key>";
  static constexpr std::string_view kValue = "<arg_value>";
  static constexpr std::string_view kValueEnd = "</arg_value>";
  size_t pos = body.find(kKey);
  ToolCall call;
  call.name = std::string(trim(body.substr(0, pos)));
  if (call.name.empty() || call.name.find_first_of("<>\n") != std::string::npos) return false;
  Json args = Json::object();
  while (pos != std::string_view::npos) {
    const size_t key_end = body.find(kKeyEnd, pos);
    if (key_end == std::string_view::npos) return false;
    const std::string key(trim(body.substr(pos + kKey.size(), key_end - pos - kKey.size())));
    const size_t value_at = body.find(kValue, key_end);
    if (value_at == std::string_view::npos ||
        !trim(body.substr(key_end + kKeyEnd.size(), value_at - key_end - kKeyEnd.size())).empty()) {
      return false;
    }
    const size_t value_end = body.find(kValueEnd, value_at);
    if (value_end == std::string_view::npos) return false;
    const std::string raw(
        body.substr(value_at + kValue.size(), value_end - value_at - kValue.size()));
    // Raw text becomes a JSON string: it must be UTF-8 (a model can write
    // any bytes).
    if (!utf8_is_valid(key) || !utf8_is_valid(raw)) return false;
    // The template writes strings raw and everything else as JSON.
    std::optional<Json> parsed;
    if (parameter_type(tools, call.name, key) != "string") parsed = parse_json(raw);
    args[key] = parsed && !parsed->is_string() ? std::move(*parsed) : Json(raw);
    pos = body.find(kKey, value_end);
    if (pos == std::string_view::npos && !trim(body.substr(value_end + kValueEnd.size())).empty())
      return false;
  }
  call.arguments = args.dump();
  out->push_back(std::move(call));
  return true;
}

// Where a self-delimited body (kMistral) ends: after the JSON array or
// object that follows the marker (or `name[ARGS]`). Resumable: the scan
// continues where the last call left it.
class JsonExtent {
 public:
  // The end of the body within `buf` (which only grows), or npos.
  size_t scan(std::string_view buf) {
    if (start_ == std::string_view::npos) {
      size_t i = 0;
      while (i < buf.size() && is_ws(buf[i])) ++i;
      if (i == buf.size()) return std::string_view::npos;
      if (buf[i] != '[' && buf[i] != '{') {
        const size_t args = buf.find("[ARGS]");
        if (args == std::string_view::npos) return std::string_view::npos;
        i = args + 6;
        while (i < buf.size() && is_ws(buf[i])) ++i;
        if (i == buf.size()) return std::string_view::npos;
      }
      start_ = pos_ = i;
    }
    for (; pos_ < buf.size(); ++pos_) {
      const char c = buf[pos_];
      if (in_string_) {
        if (escape_) {
          escape_ = false;
        } else if (c == '\\') {
          escape_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++depth_;
      } else if (c == '}' || c == ']') {
        if (--depth_ <= 0) return ++pos_;
      }
    }
    return std::string_view::npos;
  }

 private:
  size_t start_ = std::string_view::npos;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
};

struct FormatSpec {
  std::vector<std::string> starts;   // markers that open a call
  std::string end;                   // closes it; empty: JsonExtent does
  std::vector<std::string> ignored;  // markers dropped (a section around the calls)
  std::function<bool(std::string_view, std::vector<ToolCall>*)> parse;
};

FormatSpec spec_for(ToolCallFormat format, const ToolCallParserOptions& options) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return {{"<tool_call>"}, "</tool_call>", {}, parse_hermes};
    case ToolCallFormat::kMistral:
      return {{"[TOOL_CALLS]"}, "", {}, parse_mistral};
    case ToolCallFormat::kDeepSeek:
      return {{"<｜tool▁call▁begin｜>"},
              "<｜tool▁call▁end｜>",
              {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"},
              parse_deepseek};
    case ToolCallFormat::kGlm: {
      Json tools = options.tools;
      return {{"<tool_call>"},
              "</tool_call>",
              {},
              [tools](std::string_view body, std::vector<ToolCall>* out) {
                return parse_glm(body, tools, out);
              }};
    }
    default:
      return {};
  }
}

// Names and ids cut from raw text go into JSON answers: they must be UTF-8.
bool utf8_names(const std::vector<ToolCall>& calls) {
  for (const ToolCall& c : calls) {
    if (!utf8_is_valid(c.name) || !utf8_is_valid(c.id)) return false;
  }
  return true;
}

class MarkerParser final : public ToolCallParser::Impl {
 public:
  MarkerParser(ToolCallFormat format, const ToolCallParserOptions& options)
      : spec_(spec_for(format, options)), max_call_bytes_(options.max_call_bytes) {
    for (const std::string& m : spec_.starts) markers_.push_back({m, true});
    for (const std::string& m : spec_.ignored) markers_.push_back({m, false});
  }

  void feed(std::string_view piece, ModelOutput* out) override {
    buf_.append(piece);
    run(out, false);
  }
  void finish(ModelOutput* out) override { run(out, true); }

 private:
  struct Marker {
    std::string text;
    bool opens_call;
  };

  // Content, except whitespace that may still turn out to precede a call.
  void content(std::string_view text, ModelOutput* out) {
    if (text.empty()) return;
    size_t last = text.size();
    while (last > 0 && is_ws(text[last - 1])) --last;
    if (last == 0) {
      pending_ws_.append(text);
      return;
    }
    out->content += pending_ws_;
    out->content.append(text.substr(0, last));
    pending_ws_.assign(text.substr(last));
  }

  // Bytes at the end of buf_ that may be the start of a marker.
  size_t held_tail() const {
    size_t hold = 0;
    for (const Marker& m : markers_) {
      for (size_t k = std::min(m.text.size() - 1, buf_.size()); k > hold; --k) {
        if (buf_.compare(buf_.size() - k, k, m.text, 0, k) == 0) {
          hold = k;
          break;
        }
      }
    }
    return hold;
  }

  // In content: up to the next marker, else all but a possible marker start.
  // Returns false when it needs more text.
  bool step_content(ModelOutput* out, bool final) {
    size_t best = std::string::npos;
    const Marker* found = nullptr;
    for (const Marker& m : markers_) {
      const size_t at = buf_.find(m.text);
      if (at < best) {
        best = at;
        found = &m;
      }
    }
    if (found == nullptr) {
      const size_t keep = final ? 0 : held_tail();
      content(std::string_view(buf_).substr(0, buf_.size() - keep), out);
      buf_.erase(0, buf_.size() - keep);
      if (final) {
        if (!calls_found_) out->content += pending_ws_;  // an answer without calls keeps its text
        pending_ws_.clear();
      }
      return false;
    }
    content(std::string_view(buf_).substr(0, best), out);
    buf_.erase(0, best + found->text.size());
    // Whitespace before a call is not content -- unless the call fails.
    ws_before_call_ = std::exchange(pending_ws_, std::string());
    if (found->opens_call) {
      in_call_ = true;
      open_marker_ = found->text;
      extent_ = JsonExtent();
    }
    return true;
  }

  // In a call: up to its end, then parsed. Returns false when it needs more.
  bool step_call(ModelOutput* out, bool final) {
    size_t body_end = std::string::npos;
    size_t consumed = std::string::npos;
    if (!spec_.end.empty()) {
      body_end = buf_.find(spec_.end);
      if (body_end != std::string::npos) consumed = body_end + spec_.end.size();
    } else {
      body_end = consumed = extent_.scan(buf_);
    }
    if (body_end == std::string::npos) {
      if (buf_.size() > max_call_bytes_) {
        give_up(buf_.size(), out);  // bounded memory: an endless call is text
        return true;
      }
      if (!final) return false;
      body_end = consumed = buf_.size();  // the answer ended inside the call
    }
    std::vector<ToolCall> calls;
    if (spec_.parse(std::string_view(buf_).substr(0, body_end), &calls) && utf8_names(calls)) {
      for (ToolCall& c : calls) out->tool_calls.push_back(std::move(c));
      buf_.erase(0, consumed);
      in_call_ = false;
      calls_found_ = true;
    } else {
      give_up(consumed, out);
    }
    return true;
  }

  // The marker and the first `n` bytes of the call are content after all,
  // with the whitespace before them.
  void give_up(size_t n, ModelOutput* out) {
    content(ws_before_call_ + open_marker_ + buf_.substr(0, n), out);
    ws_before_call_.clear();
    buf_.erase(0, n);
    in_call_ = false;
  }

  void run(ModelOutput* out, bool final) {
    while (in_call_ ? step_call(out, final) : step_content(out, final)) {
    }
  }

  FormatSpec spec_;
  size_t max_call_bytes_;
  std::vector<Marker> markers_;
  std::string buf_;  // text not decided yet
  std::string pending_ws_;
  std::string ws_before_call_;
  std::string open_marker_;
  bool in_call_ = false;
  bool calls_found_ = false;
  JsonExtent extent_;
};

}  // namespace

std::optional<nlohmann::ordered_json> parse_tool_json(std::string_view text) {
  text = trim(text);
  if (text.empty() || !nesting_ok(text)) return std::nullopt;
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::unique_ptr<ToolCallParser::Impl> make_marker_parser(ToolCallFormat format,
                                                         const ToolCallParserOptions& options) {
  return std::make_unique<MarkerParser>(format, options);
}

}  // namespace dancemoe::tokenizer
