#include "edge_node/http/openai_tools.h"

#include <mutex>
#include <random>

#include "common/generation/json_schema_grammar.h"

namespace dancemoe::node {
namespace {

using Json = nlohmann::ordered_json;

bool is_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

const Json* member(const Json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// Returns an error message, or "" when `tool` is a valid definition.
std::string check_tool(const Json& tool) {
  if (!tool.is_object()) return "expected an object {\"type\": \"function\", \"function\": {...}}";
  const Json* type = member(tool, "type");
  if (type == nullptr || !type->is_string() || type->get<std::string>() != "function") {
    return ".type: expected \"function\"";
  }
  const Json* fn = member(tool, "function");
  if (fn == nullptr || !fn->is_object()) return ".function: expected an object";
  const Json* name = member(*fn, "name");
  if (name == nullptr || !name->is_string() || !is_function_name(name->get<std::string>())) {
    return ".function.name: expected 1 to 64 letters, digits, '_' or '-'";
  }
  if (const Json* d = member(*fn, "description"); d != nullptr && !d->is_string()) {
    return ".function.description: expected a string";
  }
  if (const Json* p = member(*fn, "parameters"); p != nullptr && !p->is_object()) {
    return ".function.parameters: expected a JSON schema object";
  }
  if (const Json* s = member(*fn, "strict"); s != nullptr && !s->is_boolean()) {
    return ".function.strict: expected a boolean";
  }
  return "";
}

bool names_a_tool(const Json& tools, const std::string& function) {
  for (const Json& tool : tools) {
    if (tool["function"]["name"].get<std::string>() == function) return true;
  }
  return false;
}

Json call_json(const tokenizer::ToolCall& call) {
  return Json{{"id", call.id.empty() ? new_tool_call_id() : call.id},
              {"type", "function"},
              {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

const Json& function_of(const Json& tool) { return tool.at("function"); }

// The schema of a function's arguments: its parameters, else any object.
Json parameters_schema(const Json& tool) {
  const Json* p = member(function_of(tool), "parameters");
  return p != nullptr ? *p : Json{{"type", "object"}};
}

// {"name": f, "arguments": ...} for each tool: a call of any of them.
Json call_schema(const Json& tools) {
  Json any = Json::array();
  for (const Json& tool : tools) {
    any.push_back({{"type", "object"},
                   {"properties",
                    {{"name", {{"const", function_of(tool)["name"]}}},
                     {"arguments", parameters_schema(tool)}}},
                   {"required", {"name", "arguments"}},
                   {"additionalProperties", false}});
  }
  return Json{{"anyOf", any}};
}

// The first strict tool (of `function`, or of all when empty) whose
// parameters constrained decoding cannot follow, as a 400.
std::optional<ApiError> unsupported_strict_parameters(const Json& tools,
                                                      const std::string& function) {
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& fn = function_of(tools[i]);
    const Json* strict = member(fn, "strict");
    if (!function.empty() && fn["name"] != function) continue;
    if (strict == nullptr || !strict->get<bool>()) continue;
    Result<Grammar> g = json_schema_grammar(parameters_schema(tools[i]));
    if (g.is_ok()) continue;
    return invalid_request(
        "tools",
        "tools[" + std::to_string(i) + "].function.parameters: " + g.status().message() +
            " (the tool is strict: its arguments are generated under this schema)",
        g.status().code() == StatusCode::kResourceExhausted ? "schema_too_large"
                                                            : "unsupported_schema");
  }
  return std::nullopt;
}

}  // namespace

std::variant<std::optional<ForcedToolCall>, ApiError> forced_tool_call(
    tokenizer::ToolCallFormat format, const ToolsRequest& request) {
  using tokenizer::ForcedCallBody;
  if (!request.active() || (request.choice != ToolChoiceMode::kRequired &&
                            request.choice != ToolChoiceMode::kFunction)) {
    return std::optional<ForcedToolCall>();
  }
  const Json& tools = request.tools;
  std::string function = request.function;
  if (function.empty() && tools.size() == 1) {
    function = function_of(tools[0])["name"].get<std::string>();
  }
  const bool named = !function.empty();
  ForcedToolCall forced;
  forced.prefix = tokenizer::forced_call_prefix(format, function);
  const ForcedCallBody body = tokenizer::forced_call_body(format, named);
  Json schema;
  if (body == ForcedCallBody::kArguments) {
    for (const Json& tool : tools) {
      if (function_of(tool)["name"] == function) schema = parameters_schema(tool);
    }
  } else if (body == ForcedCallBody::kCall || body == ForcedCallBody::kCallList) {
    schema = call_schema(tools);
    if (body == ForcedCallBody::kCallList) {
      schema = Json{{"type", "array"}, {"items", schema}, {"minItems", 1}};
    }
  } else {
    return std::optional<ForcedToolCall>(std::move(forced));  // the model writes the call
  }
  Result<Grammar> grammar = json_schema_grammar(schema);
  if (!grammar.is_ok()) {
    if (std::optional<ApiError> e = unsupported_strict_parameters(tools, function)) return *e;
    return std::optional<ForcedToolCall>(std::move(forced));  // free, as the tool allows
  }
  forced.grammar = std::make_shared<const Grammar>(std::move(*grammar));
  forced.suffix = tokenizer::forced_call_suffix(format, named);
  return std::optional<ForcedToolCall>(std::move(forced));
}

std::variant<ToolsRequest, ApiError> parse_tools_request(const nlohmann::ordered_json& body) {
  ToolsRequest r;
  if (!body.is_object()) return r;
  if (const Json* tools = member(body, "tools")) {
    if (!tools->is_array()) return invalid_request("tools", "tools: expected a list of tools");
    if (tools->size() > kMaxTools) {
      return invalid_request("tools", "tools: at most " + std::to_string(kMaxTools) + " tools");
    }
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string error = check_tool((*tools)[i]);
      if (!error.empty()) {
        return invalid_request("tools", "tools[" + std::to_string(i) + "]" + error);
      }
    }
    if (!tools->empty()) r.tools = *tools;
  }
  if (const Json* p = member(body, "parallel_tool_calls")) {
    if (!p->is_boolean()) {
      return invalid_request("parallel_tool_calls", "parallel_tool_calls: expected a boolean");
    }
    r.parallel = p->get<bool>();
  }
  const Json* choice = member(body, "tool_choice");
  if (choice == nullptr) return r;
  const char* kExpected =
      "tool_choice: expected \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
      "\"function\": {\"name\": ...}}";
  if (choice->is_string()) {
    const std::string mode = choice->get<std::string>();
    if (mode == "none") {
      r.choice = ToolChoiceMode::kNone;
    } else if (mode == "auto") {
      r.choice = ToolChoiceMode::kAuto;
    } else if (mode == "required") {
      r.choice = ToolChoiceMode::kRequired;
    } else {
      return invalid_request("tool_choice", kExpected);
    }
  } else if (choice->is_object()) {
    const Json* type = member(*choice, "type");
    const Json* fn = member(*choice, "function");
    const Json* name = fn != nullptr && fn->is_object() ? member(*fn, "name") : nullptr;
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "function" ||
        name == nullptr || !name->is_string()) {
      return invalid_request("tool_choice", kExpected);
    }
    r.choice = ToolChoiceMode::kFunction;
    r.function = name->get<std::string>();
  } else {
    return invalid_request("tool_choice", kExpected);
  }
  if (!r.tools.is_array() &&
      (r.choice == ToolChoiceMode::kRequired || r.choice == ToolChoiceMode::kFunction)) {
    return invalid_request("tool_choice",
                           "tool_choice: \"required\" or a named function needs tools");
  }
  if (r.choice == ToolChoiceMode::kFunction && !names_a_tool(r.tools, r.function)) {
    return invalid_request("tool_choice",
                           "tool_choice: the function '" + r.function + "' is not among the tools");
  }
  return r;
}

std::string new_tool_call_id() {
  static std::mutex mutex;
  static std::mt19937_64 rng(std::random_device{}());
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = "call_";
  std::lock_guard<std::mutex> lock(mutex);
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return id;
}

nlohmann::json tool_calls_json(std::span<const tokenizer::ToolCall> calls) {
  nlohmann::json out = nlohmann::json::array();
  for (const tokenizer::ToolCall& call : calls) out.push_back(nlohmann::json(call_json(call)));
  return out;
}

nlohmann::json tool_call_deltas_json(std::span<const tokenizer::ToolCall> calls,
                                     size_t first_index) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json delta = call_json(calls[i]);
    Json indexed = {{"index", first_index + i}};
    for (auto& [key, value] : delta.items()) indexed[key] = value;
    out.push_back(nlohmann::json(indexed));
  }
  return out;
}

}  // namespace dancemoe::node
