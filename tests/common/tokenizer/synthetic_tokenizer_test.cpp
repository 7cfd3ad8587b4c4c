// The synthetic demo tokenizer: exact size, specials last, deterministic,
// round-trips through our loader, and (when node and the npm fixtures are
// present) gives the same ids in @lenml/tokenizers, the HF reference.
#include "common/tokenizer/synthetic_tokenizer.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <memory>

#include "common/tokenizer/bpe_trainer.h"
#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

// stdout of `command`, or nullopt if it could not run or failed.
std::optional<std::string> run_command(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  if (pclose(pipe) != 0) return std::nullopt;
  return out;
}

}  // namespace

TEST_CASE("synthetic tokenizer: exactly vocab_size ids, the three special tokens last") {
  for (int32_t vocab_size : {259, 300, 1024, 4096}) {
    Result<SyntheticTokenizerFiles> files = make_synthetic_tokenizer(vocab_size);
    REQUIRE(files.is_ok());
    auto tok = testing::load_or_fail(files->tokenizer_json, files->tokenizer_config_json);
    CHECK(tok->vocab_size() == vocab_size);
    CHECK(tok->token_id("<|endoftext|>") == vocab_size - 3);
    CHECK(tok->token_id("<|im_start|>") == vocab_size - 2);
    CHECK(tok->token_id("<|im_end|>") == vocab_size - 1);
    CHECK(tok->eos_id() == vocab_size - 1);
    CHECK_FALSE(tok->bos_id().has_value());
    for (int32_t id = 0; id < vocab_size; ++id) REQUIRE(tok->token_text(id).has_value());
    CHECK(tok->chat_format() == ChatFormat::kChatML);
  }
}

TEST_CASE("synthetic tokenizer: learned merges compress English and round-trip any text") {
  const Tokenizer& tok = testing::synthetic();
  const std::string english = "The last train returns to the station in the evening.";
  const std::vector<int32_t> ids = testing::encode_or_fail(tok, english);
  CHECK(ids.size() < english.size() / 2);
  CHECK(tok.token_id("Ġthe").has_value());
  for (const std::string& text :
       testing::read_json_string_lines(testing::tokenizer_fixture_dir() / "corpus.jsonl")) {
    // NFC changes NFD input, so compare with the normalised form's decode.
    const std::vector<int32_t> text_ids = testing::encode_or_fail(tok, text);
    const std::string decoded = tok.decode(text_ids, false);
    CHECK(testing::encode_or_fail(tok, decoded) == text_ids);
  }
  CHECK(tok.decode(testing::encode_or_fail(tok, "naïve 😀 日本 <|im_end|>\n\t x"), false) ==
        "naïve 😀 日本 <|im_end|>\n\t x");
}

TEST_CASE("synthetic tokenizer: the same size always gives byte-identical files") {
  Result<SyntheticTokenizerFiles> a = make_synthetic_tokenizer(777);
  Result<SyntheticTokenizerFiles> b = make_synthetic_tokenizer(777);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK(a->tokenizer_json == b->tokenizer_json);
  CHECK(a->tokenizer_config_json == b->tokenizer_config_json);
}

TEST_CASE("synthetic tokenizer: vocab_size outside its range is refused") {
  Result<SyntheticTokenizerFiles> small = make_synthetic_tokenizer(258);
  REQUIRE_FALSE(small.is_ok());
  CHECK(small.status().message() ==
        "synthetic tokenizer: vocab_size must be in [259, 1048576], got 258");
  CHECK_FALSE(make_synthetic_tokenizer(kMaxSyntheticVocabSize + 1).is_ok());
}

TEST_CASE("bpe trainer: most frequent pair first, ties by the smallest pair, then fillers") {
  const BpeTrainingResult trained =
      train_byte_level_bpe({{"abab", 3}, {"cd", 5}, {"ab", 1}}, 256 + 4);
  REQUIRE(trained.vocab.size() == 260);
  REQUIRE(trained.merges.size() >= 3);
  // "a b" occurs 7 times, "c d" 5, "b a" 3.
  CHECK(trained.merges[0] == std::pair<std::string, std::string>("a", "b"));
  CHECK(trained.merges[1] == std::pair<std::string, std::string>("c", "d"));
  CHECK(trained.merges[2] == std::pair<std::string, std::string>("ab", "ab"));
  CHECK(trained.vocab[258] == "abab");
  // The corpus is exhausted after three merges; the fourth is a filler made
  // of learned tokens ("ab"+"ab" exists already, "cd"+"ab" is next).
  CHECK(trained.vocab[259] == "cdab");
}

TEST_CASE("synthetic tokenizer: @lenml/tokenizers (HF reference) gives the same ids") {
  const std::filesystem::path script = testing::tokenizer_fixture_dir() / "reference_tokenize.mjs";
  if (!std::filesystem::exists(testing::npm_fixture_dir() / "tokenizers" / "dist" / "main.mjs") ||
      !run_command("node --version 2>/dev/null")) {
    MESSAGE("SKIPPED: node or tests/fixtures/npm absent (run deploy/install-deps.sh)");
    return;
  }
  dancemoe::testing::TempDir dir("synthetic-tokenizer");
  REQUIRE(write_synthetic_tokenizer(dir.path(), 2000).is_ok());
  const std::filesystem::path corpus = testing::tokenizer_fixture_dir() / "corpus.jsonl";
  const std::optional<std::string> reference = run_command(
      "node '" + script.string() + "' '" + dir.path().string() + "' '" + corpus.string() + "'");
  REQUIRE(reference.has_value());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(dir.path() / "tokenizer.json");
  REQUIRE(tok.is_ok());
  std::string ours;
  for (const std::string& text : testing::read_json_string_lines(corpus)) {
    ours += nlohmann::json(testing::encode_or_fail(**tok, text)).dump() + "\n";
  }
  CHECK(ours == *reference);
}

}  // namespace dancemoe::tokenizer
