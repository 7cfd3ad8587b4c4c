#include "common/tokenizer/decoder.h"

#include "common/base/json_field.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/normalizer.h"
#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xNN>" token, or -1.
int fallback_byte(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  const int hi = hex_value(token[3]);
  const int lo = hex_value(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Code-point boundaries of `text` (valid UTF-8): offsets of each code point
// plus text.size().
std::vector<size_t> char_offsets(const std::string& text) {
  std::vector<size_t> offsets;
  size_t pos = 0;
  while (pos < text.size()) {
    offsets.push_back(pos);
    const size_t length = utf8_sequence_length(text, pos);
    pos += length == 0 ? 1 : length;
  }
  offsets.push_back(text.size());
  return offsets;
}

}  // namespace

Result<std::unique_ptr<Decoder>> Decoder::parse(const JsonField& field) {
  auto decoder = std::unique_ptr<Decoder>(new Decoder());
  DMOE_RETURN_IF_ERROR(parse_into(field, decoder->steps_));
  return decoder;
}

Status Decoder::parse_into(const JsonField& field, std::vector<Step>& steps) {
  DMOE_ASSIGN_OR_RETURN(JsonField type_field, field.member("type"));
  DMOE_ASSIGN_OR_RETURN(std::string_view type, type_field.as_string_view());
  if (type == "Sequence") {
    DMOE_ASSIGN_OR_RETURN(JsonField list, field.member("decoders"));
    DMOE_RETURN_IF_ERROR(list.expect_array());
    for (size_t i = 0; i < list.json().size(); ++i) {
      const JsonField child = list.element(i);
      if (child.is_null()) return child.error("expected a decoder object, found null");
      DMOE_RETURN_IF_ERROR(parse_into(child, steps));
    }
    return Status::ok();
  }
  Step step{Kind::kFuse, std::nullopt, {}};
  if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
  } else if (type == "ByteFallback") {
    step.kind = Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::kFuse;
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    DMOE_ASSIGN_OR_RETURN(JsonField pattern_field, field.member("pattern"));
    DMOE_ASSIGN_OR_RETURN(step.pattern, parse_pattern(pattern_field));
    DMOE_ASSIGN_OR_RETURN(step.content, field.required_string("content"));
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    DMOE_ASSIGN_OR_RETURN(JsonField content_field, field.member("content"));
    DMOE_ASSIGN_OR_RETURN(step.content, content_field.as_string());
    if (step.content.empty() || utf8_sequence_length(step.content, 0) != step.content.size()) {
      return content_field.error("expected exactly one character, found " +
                                 json_quote(step.content));
    }
    for (const char* key : {"start", "stop"}) {
      DMOE_ASSIGN_OR_RETURN(int64_t count, field.int_or(key, 0));
      if (count < 0) {
        DMOE_ASSIGN_OR_RETURN(JsonField count_field, field.member(key));
        return count_field.error("expected a non-negative count, found " + std::to_string(count));
      }
      (std::string_view(key) == "start" ? step.start : step.stop) = static_cast<size_t>(count);
    }
  } else {
    return type_field.unsupported(type, "ByteFallback, ByteLevel, Fuse, Replace, Sequence, Strip");
  }
  steps.push_back(std::move(step));
  return Status::ok();
}

void Decoder::apply(const Step& step, std::vector<std::string>& tokens) {
  switch (step.kind) {
    case Kind::kByteLevel: {
      std::string bytes;
      for (const std::string& token : tokens) byte_level_to_bytes(token, bytes);
      tokens.assign(1, utf8_make_valid(bytes));
      break;
    }
    case Kind::kReplace:
      for (std::string& token : tokens) {
        // A PCRE2 limit error (pathological regex) leaves the token as is.
        Result<std::string> replaced = replace_all(*step.pattern, token, step.content);
        if (replaced.is_ok()) token = std::move(replaced).value();
      }
      break;
    case Kind::kByteFallback: {
      std::vector<std::string> out;
      out.reserve(tokens.size());
      std::string run;  // bytes of consecutive <0xNN> tokens
      for (std::string& token : tokens) {
        const int byte = fallback_byte(token);
        if (byte >= 0) {
          run.push_back(static_cast<char>(byte));
          continue;
        }
        if (!run.empty()) out.push_back(utf8_make_valid(run));
        run.clear();
        out.push_back(std::move(token));
      }
      if (!run.empty()) out.push_back(utf8_make_valid(run));
      tokens = std::move(out);
      break;
    }
    case Kind::kFuse: {
      std::string fused;
      for (const std::string& token : tokens) fused += token;
      tokens.assign(1, std::move(fused));
      break;
    }
    case Kind::kStrip:
      for (std::string& token : tokens) {
        const std::vector<size_t> offsets = char_offsets(token);
        const size_t n_chars = offsets.size() - 1;
        auto char_is_content = [&](size_t i) {
          return token.compare(offsets[i], offsets[i + 1] - offsets[i], step.content) == 0;
        };
        size_t first = 0;
        while (first < step.start && first < n_chars && char_is_content(first)) ++first;
        size_t last = n_chars;  // one past the last kept char
        for (size_t i = 0; i < step.stop && last > first && char_is_content(last - 1); ++i) --last;
        token = token.substr(offsets[first], offsets[last] - offsets[first]);
      }
      break;
  }
}

std::string Decoder::token_bytes(std::string token) const {
  std::vector<std::string> one(1, std::move(token));
  bool fused = false;
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kByteLevel: {
        std::string bytes;
        byte_level_to_bytes(one[0], bytes);
        one[0] = std::move(bytes);
        break;
      }
      case Kind::kByteFallback:
        if (const int byte = fallback_byte(one[0]); byte >= 0) {
          one[0] = std::string(1, static_cast<char>(byte));
        }
        break;
      case Kind::kFuse:
        fused = true;
        break;
      case Kind::kStrip:
        if (!fused) apply(step, one);
        break;
      case Kind::kReplace:
        apply(step, one);
        break;
    }
  }
  return one[0];
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  for (const Step& step : steps_) apply(step, tokens);
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

}  // namespace dancemoe::tokenizer
