#include "common/tokenizer/chat_template.h"

#include "common/jinja/template.h"
#include "common/tokenizer/tokenizer.h"

namespace dancemoe::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kReservedVariables[] = {"messages", "tools", "add_generation_prompt",
                                              "bos_token", "eos_token"};

bool mentions(std::string_view source, std::string_view marker) {
  return source.find(marker) != std::string_view::npos;
}

std::string format_name_of(std::string_view source) {
  if (mentions(source, "<|channel|>")) return "harmony";
  if (mentions(source, "<｜User｜>")) return "deepseek_v3";
  if (mentions(source, "'User: '") && mentions(source, "Assistant:")) return "deepseek_v2";
  if (mentions(source, "[gMASK]")) return "glm4";
  if (mentions(source, "<|im_start|>")) return "chatml";
  if (mentions(source, "[INST]")) return "mistral_inst";
  if (mentions(source, "<|user|>") && mentions(source, "<|assistant|>")) return "tulu";
  return "jinja";
}

// A message's content as the text templates expect.
Result<std::string> content_text(const Json& content, const std::string& at) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    return invalid_argument(at + ".content: expected a string or a list of text parts");
  }
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const Json& part = content[j];
    const std::string part_at = at + ".content[" + std::to_string(j) + "]";
    if (!part.is_object())
      return invalid_argument(part_at + ": expected {\"type\": \"text\", \"text\": ...}");
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string() || type->get<std::string>() != "text") {
      return invalid_argument(part_at + ": only text parts are supported (got type " +
                              (type == part.end() ? std::string("none") : type->dump()) + ")");
    }
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string())
      return invalid_argument(part_at + ".text: expected a string");
    text += t->get<std::string>();
  }
  return text;
}

// Python's json.dumps(obj) spacing, as the template's own tojson would write.
std::string python_json(const Json& j) {
  Result<std::string> s = jinja::to_python_json(j);
  return s.is_ok() ? *s : j.dump();
}

Status normalize_tool_calls(Json& calls, bool arguments_as_object, const std::string& at) {
  if (calls.is_null()) return Status::ok();
  if (!calls.is_array()) return invalid_argument(at + ".tool_calls: expected a list");
  for (size_t k = 0; k < calls.size(); ++k) {
    Json& call = calls[k];
    const std::string call_at = at + ".tool_calls[" + std::to_string(k) + "]";
    if (!call.is_object()) return invalid_argument(call_at + ": expected an object");
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object())
      return invalid_argument(call_at + ".function: expected an object");
    const auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) {
      return invalid_argument(call_at + ".function.name: expected a string");
    }
    auto args = fn->find("arguments");
    if (args == fn->end() || args->is_null()) {
      (*fn)["arguments"] = arguments_as_object ? Json::object() : Json("{}");
      continue;
    }
    if (args->is_string() && arguments_as_object) {
      Json parsed = Json::parse(args->get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object()) *args = std::move(parsed);  // else kept as the text it is
    } else if (args->is_object() && !arguments_as_object) {
      *args = python_json(*args);
    }
  }
  return Status::ok();
}

Result<Json> normalize_messages(const Json& messages, bool arguments_as_object) {
  if (!messages.is_array()) return invalid_argument("messages: expected a list");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!messages[i].is_object()) return invalid_argument(at + ": expected an object");
    Json m = messages[i];
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return invalid_argument(at + ".role: expected a string");
    DMOE_ASSIGN_OR_RETURN(std::string content, content_text(m.value("content", Json()), at));
    m["content"] = std::move(content);
    for (const char* key : {"reasoning_content", "reasoning", "thinking"}) {
      const auto r = m.find(key);
      if (r == m.end() || !r->is_string()) continue;
      const std::string reasoning = r->get<std::string>();
      if (!m.contains("reasoning_content")) m["reasoning_content"] = reasoning;
      if (!m.contains("thinking")) m["thinking"] = reasoning;
      break;
    }
    if (auto calls = m.find("tool_calls"); calls != m.end()) {
      // `"tool_calls": null` or `[]` is no call: templates test for the key.
      if (calls->is_null() || (calls->is_array() && calls->empty())) {
        m.erase("tool_calls");
      } else {
        DMOE_RETURN_IF_ERROR(normalize_tool_calls(*calls, arguments_as_object, at));
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

// The probe: a tool definition, and a conversation that calls it.
Json probe_tools() {
  return Json::parse(R"([{"type": "function", "function": {"name": "dmoe_probe_tool",
      "description": "A probe.", "parameters": {"type": "object", "properties":
      {"dmoe_probe_arg": {"type": "string", "description": "An argument."}},
      "required": ["dmoe_probe_arg"]}}}])");
}

Json probe_call_messages(bool arguments_as_object) {
  Json args = Json{{"dmoe_probe_arg", "dmoe_probe_value"}};
  Json call = {{"id", "dmoeprob1"},
               {"type", "function"},
               {"function",
                {{"name", "dmoe_probe_tool"},
                 {"arguments", arguments_as_object ? args : Json(args.dump())}}}};
  return Json::array(
      {Json{{"role", "user"}, {"content", "dmoe probe question"}},
       Json{{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}},
       Json{{"role", "tool"},
            {"tool_call_id", "dmoeprob1"},
            {"name", "dmoe_probe_tool"},
            {"content", "dmoe probe result"}}});
}

}  // namespace

struct ChatTemplate::Entry {
  std::string name;
  std::shared_ptr<const jinja::Template> jinja;
  bool arguments_as_object = true;
};

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::from_jinja(
    std::vector<NamedChatTemplate> templates, ChatTemplateConfig config) {
  if (templates.empty()) return invalid_argument("chat template: none given");
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  t->config_ = std::move(config);
  bool has_default = false;
  for (NamedChatTemplate& named : templates) {
    Result<jinja::Template> parsed = jinja::Template::parse(named.source);
    if (!parsed.is_ok()) {
      return parsed.status().with_context("chat template '" + named.name + "'");
    }
    Entry entry;
    entry.name = named.name;
    entry.jinja = std::make_shared<const jinja::Template>(std::move(parsed).value());
    has_default = has_default || named.name == "default";
    t->entries_.push_back(std::move(entry));
  }
  if (!has_default && t->entries_.size() > 1) {
    return invalid_argument("chat template: named templates without one named 'default'");
  }
  if (!has_default) t->entries_.front().name = "default";
  // What the tool-using template (tool_use, else default) does with tools.
  ChatRequest probe;
  probe.tools = probe_tools();
  const Entry& tool_entry = t->entry_for(probe);
  const std::string& tool_source =
      templates[static_cast<size_t>(&tool_entry - t->entries_.data())].source;
  t->format_name_ = format_name_of(templates.front().source);
  t->tool_call_format_ = detect_tool_call_format(tool_source);
  for (Entry& entry : t->entries_) {
    for (bool as_object : {true, false}) {
      Json vars = {{"messages", probe_call_messages(as_object)},
                   {"tools", probe.tools},
                   {"add_generation_prompt", true}};
      if (t->config_.bos_token) vars["bos_token"] = *t->config_.bos_token;
      if (t->config_.eos_token) vars["eos_token"] = *t->config_.eos_token;
      Result<std::string> out = entry.jinja->render(vars);
      if (out.is_ok() && out->find("dmoe_probe_value") != std::string::npos) {
        entry.arguments_as_object = as_object;
        break;
      }
    }
  }
  Json vars = {
      {"messages", Json::array({Json{{"role", "user"}, {"content", "dmoe probe question"}}})},
      {"tools", probe.tools},
      {"add_generation_prompt", true}};
  Result<std::string> with_tools = tool_entry.jinja->render(vars);
  t->supports_tools_ =
      with_tools.is_ok() && with_tools->find("dmoe_probe_tool") != std::string::npos;
  return t;
}

std::unique_ptr<ChatTemplate> ChatTemplate::from_builtin(ChatFormat format) {
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  t->builtin_ = format;
  t->format_name_ = std::string(chat_format_name(format));
  return t;
}

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::for_tokenizer(const Tokenizer& tokenizer,
                                                                  ChatTemplateConfig config) {
  if (!tokenizer.chat_templates().empty()) {
    std::vector<NamedChatTemplate> named;
    for (const auto& [name, source] : tokenizer.chat_templates()) named.push_back({name, source});
    auto token = [&](std::optional<int32_t> id) -> std::optional<std::string> {
      if (!id) return std::nullopt;
      std::optional<std::string_view> text = tokenizer.token_text(*id);
      return text ? std::optional<std::string>(std::string(*text)) : std::nullopt;
    };
    if (!config.bos_token) config.bos_token = token(tokenizer.bos_id());
    if (!config.eos_token) config.eos_token = token(tokenizer.eos_id());
    return from_jinja(std::move(named), std::move(config));
  }
  if (std::optional<ChatFormat> format = tokenizer.chat_format()) return from_builtin(*format);
  return std::unique_ptr<ChatTemplate>();
}

std::unique_ptr<ChatTemplate> ChatTemplate::for_tokenizer_or_builtin(const Tokenizer& tokenizer,
                                                                     std::string* warning,
                                                                     ChatTemplateConfig config) {
  Result<std::unique_ptr<ChatTemplate>> t = for_tokenizer(tokenizer, std::move(config));
  if (t.is_ok()) return std::move(t).value();
  std::optional<ChatFormat> format = tokenizer.chat_format();
  *warning =
      t.status().message() + "; " +
      (format ? "using the built-in " + std::string(chat_format_name(*format)) + " format instead"
              : std::string("chat is unavailable"));
  return format ? from_builtin(*format) : nullptr;
}

const ChatTemplate::Entry& ChatTemplate::entry_for(const ChatRequest& request) const {
  const bool tools = request.tools.is_array() && !request.tools.empty();
  const Entry* fallback = &entries_.front();
  for (const Entry& e : entries_) {
    if (tools && e.name == "tool_use") return e;
    if (e.name == "default") fallback = &e;
  }
  return *fallback;
}

Result<std::string> ChatTemplate::render(const ChatRequest& request) const {
  if (builtin_) return render_builtin(request);
  const Entry& entry = entry_for(request);
  Json vars = Json::object();
  DMOE_ASSIGN_OR_RETURN(vars["messages"],
                        normalize_messages(request.messages, entry.arguments_as_object));
  if (!request.tools.is_null() && !request.tools.is_array()) {
    return invalid_argument("tools: expected a list of tool definitions");
  }
  vars["tools"] = request.tools;
  vars["add_generation_prompt"] = request.add_generation_prompt;
  if (config_.bos_token) vars["bos_token"] = *config_.bos_token;
  if (config_.eos_token) vars["eos_token"] = *config_.eos_token;
  if (!request.kwargs.is_null() && !request.kwargs.is_object()) {
    return invalid_argument("chat template kwargs: expected an object");
  }
  if (request.kwargs.is_object()) {
    for (const auto& [key, value] : request.kwargs.items()) {
      for (const char* reserved : kReservedVariables) {
        if (key == reserved)
          return invalid_argument("chat template kwargs: '" + key + "' is set by the server");
      }
      vars[key] = value;
    }
  }
  jinja::RenderOptions options;
  options.limits = config_.limits;
  if (config_.clock) options.now = config_.clock();
  return entry.jinja->render(vars, options).with_context("chat template");
}

Result<std::string> ChatTemplate::render(std::span<const ChatMessage> messages,
                                         bool add_generation_prompt) const {
  ChatRequest request;
  for (const ChatMessage& m : messages)
    request.messages.push_back({{"role", m.role}, {"content", m.content}});
  request.add_generation_prompt = add_generation_prompt;
  return render(request);
}

Result<std::string> ChatTemplate::render_builtin(const ChatRequest& request) const {
  if (request.tools.is_array() && !request.tools.empty()) {
    return invalid_argument("tools: the model has no chat template, and its built-in " +
                            std::string(chat_format_name(*builtin_)) + " format has no tool calls");
  }
  if (!request.messages.is_array()) return invalid_argument("messages: expected a list");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < request.messages.size(); ++i) {
    const Json& m = request.messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return invalid_argument(at + ".role: expected a string");
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      return invalid_argument(at + ".tool_calls: the built-in " +
                              std::string(chat_format_name(*builtin_)) +
                              " format has no tool calls");
    }
    DMOE_ASSIGN_OR_RETURN(std::string content, content_text(m.value("content", Json()), at));
    messages.push_back({m["role"].get<std::string>(), std::move(content)});
  }
  return format_chat(*builtin_, messages, request.add_generation_prompt);
}

}  // namespace dancemoe::tokenizer
