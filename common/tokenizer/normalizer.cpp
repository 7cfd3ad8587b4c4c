#include "common/tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "common/base/json_field.h"

namespace dancemoe::tokenizer {
namespace {

bool is_ascii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

std::string unicode_normalize(std::string_view text, UnicodeForm form) {
  // ASCII is invariant under all four forms; skip utf8proc's allocation.
  if (is_ascii(text)) return std::string(text);
  int options = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case UnicodeForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case UnicodeForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case UnicodeForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                                          static_cast<utf8proc_option_t>(options));
  if (n < 0) {
    // Only on invalid UTF-8 or out of memory; the pipeline passes valid
    // UTF-8, so keep the text as it is rather than lose it.
    std::free(mapped);
    return std::string(text);
  }
  std::string out(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
  std::free(mapped);
  return out;
}

Result<std::string> replace_all(const Regex& pattern, std::string_view text,
                                std::string_view content) {
  DMOE_ASSIGN_OR_RETURN(std::vector<RegexMatch> matches, pattern.find_all(text));
  if (matches.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size() + matches.size() * content.size());
  size_t pos = 0;
  for (const RegexMatch& m : matches) {
    out.append(text.substr(pos, m.begin - pos));
    out.append(content);
    pos = m.end;
  }
  out.append(text.substr(pos));
  return out;
}

Result<std::unique_ptr<Normalizer>> Normalizer::parse(const JsonField& field) {
  auto normalizer = std::unique_ptr<Normalizer>(new Normalizer());
  DMOE_RETURN_IF_ERROR(parse_into(field, normalizer->steps_));
  return normalizer;
}

Status Normalizer::parse_into(const JsonField& field, std::vector<Step>& steps) {
  DMOE_ASSIGN_OR_RETURN(JsonField type_field, field.member("type"));
  DMOE_ASSIGN_OR_RETURN(std::string_view type, type_field.as_string_view());
  if (type == "Sequence") {
    DMOE_ASSIGN_OR_RETURN(JsonField list, field.member("normalizers"));
    DMOE_RETURN_IF_ERROR(list.expect_array());
    for (size_t i = 0; i < list.json().size(); ++i) {
      const JsonField child = list.element(i);
      if (child.is_null()) return child.error("expected a normalizer object, found null");
      DMOE_RETURN_IF_ERROR(parse_into(child, steps));
    }
    return Status::ok();
  }
  if (type == "NFC") {
    steps.push_back({Kind::kNfc, {}, std::nullopt});
  } else if (type == "NFD") {
    steps.push_back({Kind::kNfd, {}, std::nullopt});
  } else if (type == "NFKC") {
    steps.push_back({Kind::kNfkc, {}, std::nullopt});
  } else if (type == "NFKD") {
    steps.push_back({Kind::kNfkd, {}, std::nullopt});
  } else if (type == "Prepend") {
    DMOE_ASSIGN_OR_RETURN(std::string prepend, field.required_string("prepend"));
    steps.push_back({Kind::kPrepend, std::move(prepend), std::nullopt});
  } else if (type == "Replace") {
    DMOE_ASSIGN_OR_RETURN(JsonField pattern_field, field.member("pattern"));
    DMOE_ASSIGN_OR_RETURN(Regex pattern, parse_pattern(pattern_field));
    DMOE_ASSIGN_OR_RETURN(std::string content, field.required_string("content"));
    steps.push_back({Kind::kReplace, std::move(content), std::move(pattern)});
  } else {
    return type_field.unsupported(type, "NFC, NFD, NFKC, NFKD, Prepend, Replace, Sequence");
  }
  return Status::ok();
}

Status Normalizer::normalize(std::string& text) const {
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kNfc:
        text = unicode_normalize(text, UnicodeForm::kNfc);
        break;
      case Kind::kNfd:
        text = unicode_normalize(text, UnicodeForm::kNfd);
        break;
      case Kind::kNfkc:
        text = unicode_normalize(text, UnicodeForm::kNfkc);
        break;
      case Kind::kNfkd:
        text = unicode_normalize(text, UnicodeForm::kNfkd);
        break;
      case Kind::kPrepend:
        // HF prepends only to a non-empty string.
        if (!text.empty()) text.insert(0, step.content);
        break;
      case Kind::kReplace: {
        DMOE_ASSIGN_OR_RETURN(text, replace_all(*step.pattern, text, step.content));
        break;
      }
    }
  }
  return Status::ok();
}

}  // namespace dancemoe::tokenizer
