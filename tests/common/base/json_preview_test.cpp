#include "common/base/json_preview.h"

#include <doctest/doctest.h>

#include <string>

namespace dancemoe {

TEST_CASE("json preview: short values are their compact text") {
  CHECK(json_preview(nlohmann::json::parse(R"({"a": [1, 2.5, "x"], "b": null})")) ==
        R"({"a":[1,2.5,"x"],"b":null})");
  CHECK(json_preview(nlohmann::json::array()) == "[]");
  CHECK(json_preview(nlohmann::json("\xff")) == "\"\xef\xbf\xbd\"");
  nlohmann::ordered_json ordered;
  ordered["z"] = 1;
  ordered["a"] = 2;
  CHECK(json_preview(ordered) == R"({"z":1,"a":2})");
}

TEST_CASE("json preview: long and deeply nested values are cut, never recursed into") {
  CHECK(json_preview(nlohmann::json(std::string(1000, 'x')), 20) == "\"xxxxxxxxxxxxxxxx...");
  // 100k levels: dump() would overflow the stack; the preview stops at the bound.
  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) deep = nlohmann::json::array({std::move(deep)});
  const std::string shown = json_preview(deep, 60);
  CHECK(shown.size() == 60);
  CHECK(shown == std::string(57, '[') + "...");
  nlohmann::json wide = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  CHECK(json_preview(wide, 10) == "[0,1,2,...");
}

}  // namespace dancemoe
