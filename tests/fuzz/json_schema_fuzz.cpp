// Fuzz target: a client's response_format schema (any bytes as JSON) must
// become a grammar or an invalid_argument -- never a crash, a hang or
// unbounded memory -- and the grammar's matcher must stay within its
// bounds on any bytes fed to it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/base/json_nesting.h"
#include "common/generation/grammar_matcher.h"
#include "common/generation/json_schema_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The schema is the text up to the first NUL; what follows is fed to the matcher.
  const size_t split = bytes.find('\0');
  const std::string_view schema_text = bytes.substr(0, split);
  const std::string_view input =
      split == std::string_view::npos ? std::string_view() : bytes.substr(split + 1);
  if (!dancemoe::check_json_nesting(schema_text, "fuzz").is_ok()) return 0;
  const auto schema = nlohmann::ordered_json::parse(schema_text, nullptr, false);
  if (schema.is_discarded()) return 0;
  auto grammar = dancemoe::json_schema_grammar(schema);
  if (!grammar.is_ok()) {
    if (grammar.status().message().empty()) __builtin_trap();
    return 0;
  }
  dancemoe::GrammarMatcher matcher(std::make_shared<dancemoe::Grammar>(std::move(*grammar)));
  dancemoe::GrammarMatcher::StateId state = matcher.initial();
  for (char c : input) {
    state = matcher.advance(state, static_cast<uint8_t>(c));
    if (state == dancemoe::GrammarMatcher::kRejected) break;
  }
  return 0;
}
