#include "common/base/json_field.h"

#include <doctest/doctest.h>

#include <string>

namespace dancemoe {

// Found by libFuzzer (split_index_fuzz): nlohmann reports a number beyond a
// double's range as out_of_range (406), not as a parse_error, and that
// exception escaped parse_json_document and aborted the process.
TEST_CASE("json document: a number beyond a double's range is an error naming the file") {
  for (const char* text : {R"({"offset": 6E536})", "[1e999]", "-1E400"}) {
    CAPTURE(text);
    Result<nlohmann::json> parsed = parse_json_document(text, "index.json");
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
    CHECK(parsed.status().message().rfind("index.json: malformed JSON", 0) == 0);
    CHECK(parsed.status().message().find("number overflow") != std::string::npos);
  }
  // Large but finite numbers and syntax errors are as before.
  CHECK(parse_json_document("[1e308]", "index.json").is_ok());
  Result<nlohmann::json> broken = parse_json_document("{\"a\": }", "index.json");
  REQUIRE_FALSE(broken.is_ok());
  CHECK(broken.status().message().rfind("index.json: malformed JSON at byte", 0) == 0);
}

}  // namespace dancemoe
