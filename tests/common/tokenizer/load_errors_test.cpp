// Bad tokenizer files are refused with an error naming the file, the JSON
// path and the offending value; never a crash.
#include <doctest/doctest.h>

#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

using testing::tiny_tokenizer_json;

const char* kModel = R"("vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])";

// The error message of loading `json` (and `config`), which must fail.
std::string load_error(std::string_view json, std::string_view config = "") {
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::from_json_text(json, config, "m/tok.json");
  REQUIRE_FALSE(tok.is_ok());
  CHECK(tok.status().code() == StatusCode::kInvalidArgument);
  return tok.status().message();
}

bool contains(const std::string& text, std::string_view part) {
  const bool found = text.find(part) != std::string::npos;
  if (!found) MESSAGE("\"" << part << "\" not in: " << text);
  return found;
}

}  // namespace

TEST_CASE("tokenizer errors: an unsupported pre-tokenizer names its JSON path and value") {
  const std::string error = load_error(
      tiny_tokenizer_json(kModel, R"("pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                   {"type": "ByteLevel", "add_prefix_space": false},
                   {"type": "Whitespace"}]})"));
  CHECK(contains(error,
                 "m/tok.json: pre_tokenizer.pretokenizers[1].type: unsupported value "
                 "\"Whitespace\" (supported: ByteLevel, Sequence, Split)"));
}

TEST_CASE("tokenizer errors: unsupported normalizer, decoder, post-processor and model types") {
  CHECK(contains(load_error(tiny_tokenizer_json(kModel, R"("normalizer": {"type": "Lowercase"})")),
                 "normalizer.type: unsupported value \"Lowercase\""));
  CHECK(contains(
      load_error(tiny_tokenizer_json(
          kModel, R"("decoder": {"type": "Sequence", "decoders": [{"type": "Metaspace"}]})")),
      "decoder.decoders[0].type: unsupported value \"Metaspace\""));
  CHECK(contains(
      load_error(tiny_tokenizer_json(kModel, R"("post_processor": {"type": "BertProcessing"})")),
      "post_processor.type: unsupported value \"BertProcessing\""));
  CHECK(contains(load_error(R"({"model": {"type": "WordPiece", "vocab": {}}})"),
                 "model.type: unsupported value \"WordPiece\" (supported: BPE)"));
  CHECK(contains(load_error(tiny_tokenizer_json(
                     kModel, R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"},
                                                  "behavior": "Sideways"})")),
                 "pre_tokenizer.behavior: unsupported value \"Sideways\""));
}

TEST_CASE("tokenizer errors: malformed JSON and missing sections") {
  CHECK(
      contains(load_error(R"({"model": {"type": "BPE", )"), "m/tok.json: malformed JSON at byte"));
  CHECK(contains(load_error("[1, 2]"), "m/tok.json: (top level): expected an object, got [1,2]"));
  CHECK(contains(load_error("{}"), "m/tok.json: model: missing required field"));
  CHECK(contains(load_error(R"({"model": {"type": "BPE", "merges": []}})"),
                 "model.vocab: missing required field"));
  CHECK(contains(load_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})"),
                 "model.merges: missing required field"));
  CHECK(contains(load_error(R"({"model": {"type": "BPE", "vocab": [], "merges": []}})"),
                 "model.vocab: expected an object, got []"));
}

TEST_CASE("tokenizer errors: inconsistent vocabulary and merges") {
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 1}, "merges": ["a c"])")),
                 "model.merges[0]: merge refers to \"c\", which is not in model.vocab"));
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 1}, "merges": ["a b"])")),
                 "model.merges[0]: merge refers to \"ab\", which is not in model.vocab"));
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 1, "ab": 2},
                                                    "merges": ["a b", "ab"])")),
                 "model.merges[1]: expected \"left right\" with exactly one space, found \"ab\""));
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 1, "ab": 2},
                                                    "merges": [["a"]])")),
                 "model.merges[0]: expected a merge"));
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0, "b": -1}, "merges": [])")),
                 "model.vocab[\"b\"]: expected a token id in [0, 4194303], found -1"));
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 0}, "merges": [])")),
                 "id 0 is also used by"));
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0}, "merges": [],
                                                    "unk_token": "<unk>")")),
                 "model.unk_token: \"<unk>\" is not in model.vocab"));
  CHECK(contains(
      load_error(tiny_tokenizer_json(R"("vocab": {"a": 0}, "merges": [], "dropout": 0.1)")),
      "model.dropout: BPE dropout is not supported"));
  CHECK(contains(load_error(tiny_tokenizer_json(R"("vocab": {"a": 0}, "merges": [],
                                                    "continuing_subword_prefix": "##")")),
                 "model.continuing_subword_prefix: a non-empty value is not supported"));
}

TEST_CASE("tokenizer errors: bad regexes, templates, added tokens and config tokens") {
  CHECK(contains(load_error(tiny_tokenizer_json(
                     kModel, R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"},
                                                  "behavior": "Isolated"})")),
                 "pre_tokenizer.pattern.Regex: cannot compile regex /(a/"));
  CHECK(contains(
      load_error(tiny_tokenizer_json(kModel, R"("post_processor": {"type": "TemplateProcessing",
                                 "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                            {"Sequence": {"id": "A", "type_id": 0}}],
                                 "special_tokens": {"<s>": {"id": "<s>", "ids": [9]}}})")),
      "the template adds token id 9, which is neither in model.vocab nor in added_tokens"));
  CHECK(contains(
      load_error(tiny_tokenizer_json(kModel, R"("added_tokens": [{"id": 5, "content": "<x>"},
                                                 {"id": 5, "content": "<y>"}])")),
      "added_tokens[1].id: id 5 is used by two added tokens"));
  CHECK(contains(
      load_error(tiny_tokenizer_json(kModel), R"({"eos_token": "</s>"})"),
      "m/tok.json (tokenizer_config.json): eos_token: \"</s>\" is not a token of m/tok.json"));
  CHECK(contains(load_error(tiny_tokenizer_json(kModel), "{oops"),
                 "m/tok.json (tokenizer_config.json): malformed JSON"));
}

TEST_CASE("tokenizer errors: load() names a missing file") {
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load("/nonexistent/dir/tokenizer.json");
  REQUIRE_FALSE(tok.is_ok());
  CHECK(tok.status().code() == StatusCode::kNotFound);
  CHECK(tok.status().message() == "/nonexistent/dir/tokenizer.json: cannot open file");
}

TEST_CASE("tokenizer errors: load() reads tokenizer_config.json beside tokenizer.json") {
  dancemoe::testing::TempDir dir("tokenizer-load");
  REQUIRE(write_synthetic_tokenizer(dir.path(), 300).is_ok());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(dir.path() / "tokenizer.json");
  REQUIRE(tok.is_ok());
  CHECK((*tok)->eos_id() == 299);
  CHECK((*tok)->chat_format() == ChatFormat::kChatML);
  // The model directory itself works too.
  Result<std::unique_ptr<Tokenizer>> from_dir = Tokenizer::load(dir.path());
  REQUIRE(from_dir.is_ok());
  CHECK((*from_dir)->vocab_size() == 300);
  // A broken config is reported with its own path.
  std::ofstream(dir.path() / "tokenizer_config.json") << R"({"eos_token": 5})";
  Result<std::unique_ptr<Tokenizer>> bad = Tokenizer::load(dir.path() / "tokenizer.json");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(contains(bad.status().message(), (dir.path() / "tokenizer_config.json").string() +
                                             ": eos_token: expected a string, got 5"));
}

}  // namespace dancemoe::tokenizer
