// The BPE model on tiny hand-written vocabularies: merge order, tie
// breaking, byte fallback, unknown tokens, ignore_merges, long words.
#include "common/tokenizer/bpe_model.h"

#include <doctest/doctest.h>

#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

using testing::encode_or_fail;
using testing::load_or_fail;
using testing::tiny_tokenizer_json;
using Ids = std::vector<int32_t>;

// vocab a b c ab bc abc; the merges are given per test.
std::string abc_json(std::string_view merges) {
  return tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
                               "merges": )" +
                             std::string(merges));
}

// Every <0xNN> token, as Llama/Mistral vocabularies have them, from id 10.
std::string byte_tokens_json() {
  std::string json;
  for (int b = 0; b < 256; ++b) {
    char token[16];
    std::snprintf(token, sizeof token, "\"<0x%02X>\": %d", b, 10 + b);
    json += ", ";
    json += token;
  }
  return json;
}

}  // namespace

TEST_CASE("bpe: the pair with the lowest merge rank is merged first, wherever it is") {
  // "b c" ranks before "a b": abc -> a bc -> abc.
  auto tok = load_or_fail(abc_json(R"(["b c", "a b", "a bc"])"));
  CHECK(encode_or_fail(*tok, "abc") == Ids{5});
  // "a b" first: abc -> ab c, and there is no "ab c" merge.
  auto other = load_or_fail(abc_json(R"(["a b", "b c", "a bc"])"));
  CHECK(encode_or_fail(*other, "abc") == Ids{3, 2});
}

TEST_CASE("bpe: equal ranks merge the leftmost pair first") {
  auto tok = load_or_fail(tiny_tokenizer_json(R"("vocab": {"a": 0, "aa": 1}, "merges": ["a a"])"));
  CHECK(encode_or_fail(*tok, "aaa") == Ids{1, 0});
  CHECK(encode_or_fail(*tok, "aaaa") == Ids{1, 1});
  CHECK(encode_or_fail(*tok, "aaaaa") == Ids{1, 1, 0});
}

TEST_CASE("bpe: merges in the new [left, right] format equal the old \"left right\" format") {
  auto old_format = load_or_fail(abc_json(R"(["b c", "a bc"])"));
  auto new_format = load_or_fail(abc_json(R"([["b", "c"], ["a", "bc"]])"));
  for (const char* text : {"abc", "cab", "bcbca", "aaa"}) {
    CHECK(encode_or_fail(*old_format, text) == encode_or_fail(*new_format, text));
  }
}

TEST_CASE("bpe: a character outside the vocabulary falls back to its <0xNN> byte tokens") {
  auto tok = load_or_fail(
      tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 1, "ab": 2)" + byte_tokens_json() +
                          R"(}, "merges": ["a b"], "byte_fallback": true, "unk_token": null)"));
  // "é" is C3 A9; "😀" is F0 9F 98 80.
  CHECK(encode_or_fail(*tok, "abé") == Ids{2, 10 + 0xC3, 10 + 0xA9});
  CHECK(encode_or_fail(*tok, "😀a") == Ids{10 + 0xF0, 10 + 0x9F, 10 + 0x98, 10 + 0x80, 0});
  // Decoding with a ByteFallback decoder restores the text.
  auto with_decoder = load_or_fail(tiny_tokenizer_json(
      R"("vocab": {"a": 0, "b": 1, "ab": 2)" + byte_tokens_json() +
          R"(}, "merges": ["a b"], "byte_fallback": true)",
      R"("decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]})"));
  const Ids ids = encode_or_fail(*with_decoder, "a😀bé");
  CHECK(with_decoder->decode(ids, false) == "a😀bé");
  // An invalid byte run decodes to U+FFFD per maximal ill-formed subpart.
  CHECK(with_decoder->decode(Ids{10 + 0xF0, 10 + 0x9F, 0}, false) ==
        "\xEF\xBF\xBD"
        "a");
}

TEST_CASE("bpe: without byte tokens an unknown character becomes unk, fused when fuse_unk") {
  const std::string vocab = R"("vocab": {"<unk>": 0, "a": 1}, "merges": [], "unk_token": "<unk>")";
  auto fused = load_or_fail(tiny_tokenizer_json(vocab + R"(, "fuse_unk": true)"));
  CHECK(encode_or_fail(*fused, "xya") == Ids{0, 1});
  CHECK(encode_or_fail(*fused, "axyza") == Ids{1, 0, 1});
  auto unfused = load_or_fail(tiny_tokenizer_json(vocab + R"(, "fuse_unk": false)"));
  CHECK(encode_or_fail(*unfused, "xya") == Ids{0, 0, 1});
  // byte_fallback with missing byte tokens also ends in unk.
  auto partial = load_or_fail(tiny_tokenizer_json(
      R"("vocab": {"<unk>": 0, "a": 1, "<0xC3>": 2}, "merges": [], "unk_token": "<unk>",
         "byte_fallback": true)"));
  CHECK(encode_or_fail(*partial, "é") == Ids{0});
}

TEST_CASE("bpe: without unk token or byte fallback an unknown character is dropped") {
  auto tok = load_or_fail(tiny_tokenizer_json(R"("vocab": {"a": 0}, "merges": [])"));
  CHECK(encode_or_fail(*tok, "axa") == Ids{0, 0});
}

TEST_CASE("bpe: ignore_merges takes a whole word from the vocabulary") {
  // "abc" is in the vocabulary but no merge sequence reaches it.
  const std::string fields = R"("vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4},
                                "merges": ["a b"])";
  auto plain = load_or_fail(tiny_tokenizer_json(fields));
  CHECK(encode_or_fail(*plain, "abc") == Ids{3, 2});
  auto ignore = load_or_fail(tiny_tokenizer_json(fields + R"(, "ignore_merges": true)"));
  CHECK(encode_or_fail(*ignore, "abc") == Ids{4});
}

TEST_CASE("bpe: a 100k-character word is merged completely and in linear-log time") {
  auto tok = load_or_fail(tiny_tokenizer_json(
      R"("vocab": {"a": 0, "b": 1, "ab": 2, "abab": 3}, "merges": ["a b", "ab ab"])"));
  std::string word;
  for (int i = 0; i < 50000; ++i) word += "ab";
  const Ids ids = encode_or_fail(*tok, word);
  REQUIRE(ids.size() == 25000);
  CHECK(std::all_of(ids.begin(), ids.end(), [](int32_t id) { return id == 3; }));
}

TEST_CASE("bpe: vocab_size, token_id and token_text cover model and added tokens") {
  auto tok = load_or_fail(
      tiny_tokenizer_json(R"("vocab": {"a": 0, "b": 1}, "merges": [])",
                          R"("added_tokens": [{"id": 7, "content": "<x>", "special": true}])"));
  CHECK(tok->vocab_size() == 8);
  CHECK(tok->token_id("b") == 1);
  CHECK(tok->token_id("<x>") == 7);
  CHECK_FALSE(tok->token_id("c").has_value());
  CHECK(tok->token_text(0) == "a");
  CHECK(tok->token_text(7) == "<x>");
  CHECK_FALSE(tok->token_text(5).has_value());
  CHECK(tok->is_special(7));
  CHECK_FALSE(tok->is_special(0));
  // Ids without a token are skipped when decoding, as HF does.
  CHECK(tok->decode(Ids{0, 5, 1, -3, 99}, false) == "a b");
}

}  // namespace dancemoe::tokenizer
