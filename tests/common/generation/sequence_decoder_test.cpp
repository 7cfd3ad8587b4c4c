#include "common/generation/sequence_decoder.h"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "common/generation/json_schema_grammar.h"

namespace dancemoe {
namespace {

TEST_CASE("sequence decoder: a grammar's errors name the request field that asked for it") {
  Result<Grammar> grammar = json_object_grammar();
  REQUIRE(grammar.is_ok());
  GenerationParams params;
  params.max_tokens = 4;
  params.grammar = std::make_shared<const Grammar>(std::move(*grammar));
  const std::vector<int32_t> prompt = {1, 2, 3};
  // Without a tokenizer no grammar can be followed.
  auto made = SequenceDecoder::create(params, prompt, nullptr, {}, nullptr, 64, false);
  REQUIRE_FALSE(made.is_ok());
  CHECK(made.status().message().find("response_format needs the model's tokenizer") !=
        std::string::npos);
  params.grammar_field = "tool_choice";  // a forced tool call's arguments
  made = SequenceDecoder::create(params, prompt, nullptr, {}, nullptr, 64, false);
  REQUIRE_FALSE(made.is_ok());
  CHECK(made.status().message().find("tool_choice needs the model's tokenizer") !=
        std::string::npos);
}

}  // namespace
}  // namespace dancemoe
