#include "common/tokenizer/harmony_parser.h"

#include <algorithm>
#include <optional>

#include "common/tokenizer/tool_call_formats.h"
#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEndMarkers[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The word after `at` in `header`, up to whitespace or a marker.
std::string word_at(std::string_view header, size_t at) {
  size_t end = at;
  while (end < header.size() && !is_space(header[end]) && header[end] != '<') ++end;
  return std::string(header.substr(at, end - at));
}

struct Header {
  std::string channel;
  std::string recipient;
};

Header parse_header(std::string_view header) {
  Header h;
  if (const size_t at = header.find(kChannel); at != std::string_view::npos) {
    size_t from = at + kChannel.size();
    while (from < header.size() && is_space(header[from])) ++from;
    h.channel = word_at(header, from);
  }
  for (size_t at = header.find("to="); at != std::string_view::npos;
       at = header.find("to=", at + 3)) {
    if (at == 0 || is_space(header[at - 1]) || header[at - 1] == '>') {
      h.recipient = word_at(header, at + 3);
      break;
    }
  }
  return h;
}

class HarmonyParser final : public ToolCallParser::Impl {
 public:
  explicit HarmonyParser(const ToolCallParserOptions& options)
      : max_call_bytes_(options.max_call_bytes) {}

  void feed(std::string_view piece, ModelOutput* out) override {
    buf_.append(piece);
    run(out, false);
  }

  void finish(ModelOutput* out) override {
    run(out, true);
    if (state_ == State::kBody) end_message(out);
    if (state_ == State::kHeader && !buf_.empty() && buf_.find("<|") == std::string::npos) {
      out->content += buf_;  // plain text after all
    }
    buf_.clear();
  }

 private:
  enum class State { kHeader, kBody, kRaw };

  // Bytes at the end of buf_ that may start a marker ("<|...").
  size_t held_tail() const {
    const size_t lt = buf_.rfind('<');
    if (lt == std::string::npos) return 0;
    const std::string_view tail = std::string_view(buf_).substr(lt);
    if (tail.size() > 12 || tail.find('>') != std::string_view::npos) return 0;
    return tail.size() == 1 || tail[1] == '|' ? tail.size() : 0;
  }

  void emit_body(std::string_view text, ModelOutput* out) {
    if (text.empty()) return;
    if (!header_.recipient.empty()) {
      call_body_.append(text);
    } else if (header_.channel == "analysis") {
      out->reasoning.append(text);
    } else {
      out->content.append(text);
    }
  }

  void end_message(ModelOutput* out) {
    if (!header_.recipient.empty()) {
      ToolCall call;
      call.name = header_.recipient.rfind("functions.", 0) == 0 ? header_.recipient.substr(10)
                                                                : header_.recipient;
      const std::optional<nlohmann::ordered_json> j = parse_tool_json(call_body_);
      if (!call.name.empty() && utf8_is_valid(call.name) && j && j->is_object()) {
        call.arguments = j->dump();
        out->tool_calls.push_back(std::move(call));
      } else {
        out->content.append(call_body_);  // not a call after all
      }
    }
    call_body_.clear();
    header_ = Header();
    state_ = State::kHeader;
  }

  bool step_header(ModelOutput* out, bool final) {
    const size_t at = buf_.find(kMessage);
    if (at == std::string::npos || at > kMaxHarmonyHeaderBytes) {
      // Not harmony when no <|message|> starts within the bound: decided
      // once one starting at the bound would have arrived whole, so that
      // pieces of any size decide as the whole text does.
      if (buf_.size() >= kMaxHarmonyHeaderBytes + kMessage.size() ||
          (final && buf_.find("<|") == std::string::npos)) {
        state_ = State::kRaw;  // pass it through
        return true;
      }
      return false;
    }
    header_ = parse_header(std::string_view(buf_).substr(0, at));
    buf_.erase(0, at + kMessage.size());
    state_ = State::kBody;
    (void)out;
    return true;
  }

  bool step_body(ModelOutput* out, bool final) {
    size_t best = std::string::npos;
    size_t marker_size = 0;
    for (std::string_view m : kEndMarkers) {
      const size_t at = buf_.find(m);
      if (at < best) {
        best = at;
        marker_size = m == kStart ? 0 : m.size();  // <|start|> begins the next header
      }
    }
    if (best == std::string::npos) {
      const size_t keep = final ? 0 : held_tail();
      emit_body(std::string_view(buf_).substr(0, buf_.size() - keep), out);
      buf_.erase(0, buf_.size() - keep);
      if (call_body_.size() > max_call_bytes_) {
        out->content += call_body_;  // bounded memory: an endless call is text
        call_body_.clear();
        header_.recipient.clear();
      }
      return false;
    }
    emit_body(std::string_view(buf_).substr(0, best), out);
    buf_.erase(0, best + marker_size);
    end_message(out);
    return true;
  }

  void run(ModelOutput* out, bool final) {
    while (true) {
      if (state_ == State::kRaw) {
        out->content += buf_;
        buf_.clear();
        return;
      }
      const bool more = state_ == State::kHeader ? step_header(out, final) : step_body(out, final);
      if (!more) return;
    }
  }

  size_t max_call_bytes_;
  State state_ = State::kHeader;
  Header header_;
  std::string buf_;
  std::string call_body_;
};

}  // namespace

std::unique_ptr<ToolCallParser::Impl> make_harmony_parser(const ToolCallParserOptions& options) {
  return std::make_unique<HarmonyParser>(options);
}

}  // namespace dancemoe::tokenizer
