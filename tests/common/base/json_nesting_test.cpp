#include "common/base/json_nesting.h"

#include <doctest/doctest.h>

#include <string>

#include "common/base/json_field.h"

namespace dancemoe {

TEST_CASE("json nesting: deep text is refused before parsing, brackets in strings do not count") {
  CHECK(check_json_nesting(R"({"a": [[1]], "b": "[[[[[["})", "body", 3).is_ok());
  const Status deep = check_json_nesting("[[[[1]]]]", "body", 3);
  CHECK(deep.code() == StatusCode::kInvalidArgument);
  CHECK(deep.message() == "body: JSON nested deeper than 3 levels (at byte 3)");
  CHECK(check_json_nesting(R"(["\"[[[[", 1])", "body", 1).is_ok());
  CHECK(check_json_nesting(std::string(100000, '['), "body").code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("json nesting: a document 100k deep is an error naming the file, not a crash") {
  const std::string text = std::string(100000, '[') + std::string(100000, ']');
  Result<nlohmann::json> parsed = parse_json_document(text, "input.json");
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.status().message().rfind("input.json: JSON nested deeper than 128 levels", 0) == 0);
}

}  // namespace dancemoe
