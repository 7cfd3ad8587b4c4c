#include "common/tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "common/base/json_field.h"
#include "common/tokenizer/byte_level.h"

namespace dancemoe::tokenizer {
namespace {

// The GPT-2 split regex that ByteLevel uses when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Piece {
  size_t begin;
  size_t end;
  bool is_match;
};

// Covers the whole of `text` with alternating gaps and matches, as HF's
// Pattern::find_matches does (an empty text is one empty non-match).
Result<std::vector<Piece>> find_pieces(const Regex& pattern, std::string_view text, bool invert) {
  std::vector<Piece> pieces;
  if (text.empty()) {
    pieces.push_back({0, 0, invert});
    return pieces;
  }
  DMOE_ASSIGN_OR_RETURN(std::vector<RegexMatch> matches, pattern.find_all(text));
  size_t prev = 0;
  for (const RegexMatch& m : matches) {
    if (prev != m.begin) pieces.push_back({prev, m.begin, invert});
    pieces.push_back({m.begin, m.end, !invert});
    prev = m.end;
  }
  if (prev != text.size()) pieces.push_back({prev, text.size(), invert});
  return pieces;
}

}  // namespace

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::parse(const JsonField& field) {
  auto pre_tokenizer = std::unique_ptr<PreTokenizer>(new PreTokenizer());
  DMOE_RETURN_IF_ERROR(parse_into(field, pre_tokenizer->steps_));
  return pre_tokenizer;
}

Status PreTokenizer::parse_into(const JsonField& field, std::vector<Step>& steps) {
  DMOE_ASSIGN_OR_RETURN(JsonField type_field, field.member("type"));
  DMOE_ASSIGN_OR_RETURN(std::string_view type, type_field.as_string_view());
  if (type == "Sequence") {
    DMOE_ASSIGN_OR_RETURN(JsonField list, field.member("pretokenizers"));
    DMOE_RETURN_IF_ERROR(list.expect_array());
    for (size_t i = 0; i < list.json().size(); ++i) {
      const JsonField child = list.element(i);
      if (child.is_null()) return child.error("expected a pre-tokenizer object, found null");
      DMOE_RETURN_IF_ERROR(parse_into(child, steps));
    }
    return Status::ok();
  }
  Step step{Kind::kSplit, std::nullopt};
  if (type == "Split") {
    DMOE_ASSIGN_OR_RETURN(JsonField pattern_field, field.member("pattern"));
    DMOE_ASSIGN_OR_RETURN(step.pattern, parse_pattern(pattern_field));
    DMOE_ASSIGN_OR_RETURN(JsonField behavior_field, field.member("behavior"));
    DMOE_ASSIGN_OR_RETURN(std::string_view behavior, behavior_field.as_string_view());
    if (behavior == "Removed") {
      step.behavior = Behavior::kRemoved;
    } else if (behavior == "Isolated") {
      step.behavior = Behavior::kIsolated;
    } else if (behavior == "MergedWithPrevious") {
      step.behavior = Behavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      step.behavior = Behavior::kMergedWithNext;
    } else if (behavior == "Contiguous") {
      step.behavior = Behavior::kContiguous;
    } else {
      return behavior_field.unsupported(
          behavior, "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
    }
    DMOE_ASSIGN_OR_RETURN(step.invert, field.bool_or("invert", false));
  } else if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
    DMOE_ASSIGN_OR_RETURN(step.add_prefix_space, field.bool_or("add_prefix_space", true));
    DMOE_ASSIGN_OR_RETURN(bool use_regex, field.bool_or("use_regex", true));
    if (use_regex) {
      Result<Regex> gpt2 = Regex::compile(kGpt2Pattern);
      if (!gpt2.is_ok()) return internal_error(gpt2.status().message());
      step.pattern = std::move(gpt2).value();
    }
  } else {
    return type_field.unsupported(type, "ByteLevel, Sequence, Split");
  }
  steps.push_back(std::move(step));
  return Status::ok();
}

Status PreTokenizer::apply(const Step& step, const std::string& piece,
                           std::vector<std::string>& out) {
  if (step.kind == Kind::kByteLevel) {
    const bool add_space = step.add_prefix_space && (piece.empty() || piece[0] != ' ');
    const std::string text = add_space ? " " + piece : piece;
    if (!step.pattern) {
      out.push_back(bytes_to_byte_level(text));
      return Status::ok();
    }
    DMOE_ASSIGN_OR_RETURN(std::vector<Piece> pieces, find_pieces(*step.pattern, text, false));
    for (const Piece& p : pieces) {
      if (p.end > p.begin) {
        out.push_back(bytes_to_byte_level(std::string_view(text).substr(p.begin, p.end - p.begin)));
      }
    }
    return Status::ok();
  }

  DMOE_ASSIGN_OR_RETURN(std::vector<Piece> pieces, find_pieces(*step.pattern, piece, step.invert));
  // Each split is (begin, end, remove); the folds mirror HF's
  // NormalizedString::split for every SplitDelimiterBehavior.
  std::vector<Piece> splits;
  bool previous_match = false;
  switch (step.behavior) {
    case Behavior::kIsolated:
      for (const Piece& p : pieces) splits.push_back({p.begin, p.end, false});
      break;
    case Behavior::kRemoved:
      splits = pieces;
      break;
    case Behavior::kMergedWithPrevious:
      for (const Piece& p : pieces) {
        if (p.is_match && !previous_match && !splits.empty()) {
          splits.back().end = p.end;
        } else {
          splits.push_back({p.begin, p.end, false});
        }
        previous_match = p.is_match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !previous_match && !splits.empty()) {
          splits.back().begin = it->begin;
        } else {
          splits.push_back({it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(splits.begin(), splits.end());
      break;
    case Behavior::kContiguous:
      for (const Piece& p : pieces) {
        if (p.is_match == previous_match && !splits.empty()) {
          splits.back().end = p.end;
        } else {
          splits.push_back({p.begin, p.end, false});
        }
        previous_match = p.is_match;
      }
      break;
  }
  for (const Piece& s : splits) {
    if (!s.is_match && s.end > s.begin) out.push_back(piece.substr(s.begin, s.end - s.begin));
  }
  return Status::ok();
}

Status PreTokenizer::pre_tokenize(std::string_view text, std::vector<std::string>& words) const {
  std::vector<std::string> pieces{std::string(text)};
  std::vector<std::string> next;
  for (const Step& step : steps_) {
    next.clear();
    for (const std::string& piece : pieces) DMOE_RETURN_IF_ERROR(apply(step, piece, next));
    pieces.swap(next);
  }
  for (std::string& piece : pieces) {
    if (!piece.empty()) words.push_back(std::move(piece));
  }
  return Status::ok();
}

}  // namespace dancemoe::tokenizer
