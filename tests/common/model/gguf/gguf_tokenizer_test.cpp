// The tokenizer from GGUF metadata gives the same ids as the model's
// tokenizer.json: each real tokenizer (Qwen3: gpt2 kind; Llama 2 / Mistral:
// llama kind) and the synthetic one is written to GGUF keys, read back, and
// must encode every string of the tokenizer corpus to exactly the ids (with
// and without special tokens) and decode to the same text as the original.
// The llama kind is also checked without merges in the file (derived from
// the scores, as for a GGUF converted from a sentencepiece model).
#include "common/model/gguf/gguf_tokenizer.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/base/file_util.h"
#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::gguf {
namespace {

using tokenizer::Tokenizer;

// The GGUF keys of a tokenizer, with the token list padded to `vocab_size`
// ("[PADn]" tokens, as for a model whose embedding has spare rows).
File written(const std::string& tokenizer_json, const std::string& config_json, int64_t vocab_size,
             bool drop_merges = false) {
  GgufWriter w;
  const Status s = tokenizer_to_gguf(tokenizer_json, config_json, "tokenizer.json", vocab_size, &w);
  REQUIRE_MESSAGE(s.is_ok(), s.to_string());
  Result<File> f = parse_gguf(w.header_bytes(), "tok.gguf");
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  if (drop_merges) f->metadata.erase("tokenizer.ggml.merges");
  return std::move(f).value();
}

std::unique_ptr<Tokenizer> from_gguf(const File& f) {
  Result<TokenizerTexts> texts = tokenizer_from_gguf(f, "tok.gguf");
  REQUIRE_MESSAGE(texts.is_ok(), texts.status().to_string());
  return tokenizer::testing::load_or_fail(texts->tokenizer_json, texts->tokenizer_config_json);
}

void check_same_ids(const Tokenizer& original, const Tokenizer& from_file) {
  const std::vector<std::string> corpus = tokenizer::testing::read_json_string_lines(
      tokenizer::testing::tokenizer_fixture_dir() / "corpus.jsonl");
  REQUIRE(corpus.size() > 100);
  int mismatches = 0;
  for (const std::string& text : corpus) {
    for (bool special : {false, true}) {
      const std::vector<int32_t> want = tokenizer::testing::encode_or_fail(original, text, special);
      const std::vector<int32_t> got = tokenizer::testing::encode_or_fail(from_file, text, special);
      if (want != got) {
        if (++mismatches <= 3) MESSAGE("ids differ for ", text, " (special ", special, ")");
      } else if (!special && original.decode(want, true) != from_file.decode(got, true)) {
        if (++mismatches <= 3) MESSAGE("decoded text differs for ", text);
      }
    }
  }
  CHECK(mismatches == 0);
  CHECK(original.vocab_size() == from_file.vocab_size());
  CHECK(original.bos_id() == from_file.bos_id());
  CHECK(original.eos_id() == from_file.eos_id());
}

void check_npm_fixture(const char* package, const char* kind) {
  const auto dir = tokenizer::testing::npm_fixture_dir() / package / "models";
  if (!std::filesystem::exists(dir / "tokenizer.json")) {
    MESSAGE("npm fixture ", package, " absent (deploy/install-deps.sh); skipped");
    return;
  }
  Result<std::string> json = read_file(dir / "tokenizer.json");
  Result<std::string> config = read_file(dir / "tokenizer_config.json");
  REQUIRE(json.is_ok());
  REQUIRE(config.is_ok());
  const auto original = tokenizer::testing::load_or_fail(*json, *config);
  const File f = written(*json, *config, original->vocab_size() + 11);
  CHECK(f.find("tokenizer.ggml.model")->text == kind);
  CHECK(f.find("tokenizer.ggml.tokens")->array_size ==
        static_cast<uint64_t>(original->vocab_size() + 11));
  check_same_ids(*original, *from_gguf(f));
  if (std::string_view(kind) == "llama") {
    INFO("merges derived from the scores");
    check_same_ids(*original, *from_gguf(written(*json, *config, original->vocab_size(),
                                                 /*drop_merges=*/true)));
  }
}

TEST_CASE("gguf tokenizer: Qwen3 (gpt2 kind, qwen2 pre-tokenizer) gives the tokenizer.json ids") {
  check_npm_fixture("tokenizer-qwen3", "gpt2");
}

TEST_CASE("gguf tokenizer: Llama 2 / Mistral (llama kind) gives the tokenizer.json ids") {
  check_npm_fixture("tokenizer-llama2", "llama");
}

TEST_CASE("gguf tokenizer: the synthetic tokenizer round-trips") {
  Result<tokenizer::SyntheticTokenizerFiles> files = tokenizer::make_synthetic_tokenizer(1024);
  REQUIRE(files.is_ok());
  const auto original =
      tokenizer::testing::load_or_fail(files->tokenizer_json, files->tokenizer_config_json);
  const File f = written(files->tokenizer_json, files->tokenizer_config_json, 1024);
  CHECK(f.find("tokenizer.ggml.pre")->text == "qwen2");
  const auto back = from_gguf(f);
  check_same_ids(*original, *back);
  CHECK(back->chat_format().has_value() == original->chat_format().has_value());
}

TEST_CASE("gguf tokenizer: bad metadata names the key") {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
  w.set_i32_array("tokenizer.ggml.token_type", {1});
  Result<File> f = parse_gguf(w.header_bytes(), "tok.gguf");
  REQUIRE(f.is_ok());
  Result<TokenizerTexts> t = tokenizer_from_gguf(*f, "tok.gguf");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message().find("tok.gguf: metadata 'tokenizer.ggml.token_type'") !=
        std::string::npos);

  w.set_i32_array("tokenizer.ggml.token_type", {1, 1});
  f = parse_gguf(w.header_bytes(), "tok.gguf");
  t = tokenizer_from_gguf(*f, "tok.gguf");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message().find("'tokenizer.ggml.merges' is missing") != std::string::npos);

  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  w.set_string("tokenizer.ggml.pre", "chameleon");
  f = parse_gguf(w.header_bytes(), "tok.gguf");
  t = tokenizer_from_gguf(*f, "tok.gguf");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message().find("pre-tokenizer 'chameleon'") != std::string::npos);

  w.set_string("tokenizer.ggml.model", "rwkv");
  f = parse_gguf(w.header_bytes(), "tok.gguf");
  t = tokenizer_from_gguf(*f, "tok.gguf");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message().find("'rwkv' is not supported") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::gguf
