// Added/special tokens: found in the raw text before normalisation,
// leftmost-longest, with HF's lstrip / rstrip / single_word / normalized
// flags; and the special-token handling of encode and decode.
#include "common/tokenizer/added_vocabulary.h"

#include <doctest/doctest.h>

#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

using testing::encode_or_fail;
using testing::load_or_fail;
using testing::tiny_tokenizer_json;
using Ids = std::vector<int32_t>;

// Single-character vocabulary a..z, space (26) and '▁' (27); no merges.
std::string letters_model() {
  std::string vocab = R"("vocab": {)";
  for (char c = 'a'; c <= 'z'; ++c) {
    vocab += "\"";
    vocab += c;
    vocab += "\": " + std::to_string(c - 'a') + ", ";
  }
  vocab += R"(" ": 26, "▁": 27}, "merges": [])";
  return vocab;
}

std::string added(std::string_view tokens) {
  return R"("added_tokens": [)" + std::string(tokens) + "]";
}

}  // namespace

TEST_CASE("added tokens: the longest token starting leftmost wins") {
  auto tok = load_or_fail(
      tiny_tokenizer_json(letters_model(), added(R"({"id": 100, "content": "<m>", "special": true},
                                 {"id": 101, "content": "<m>x", "special": true},
                                 {"id": 102, "content": "m>x<", "special": true})")));
  CHECK(encode_or_fail(*tok, "a<m>xb") == Ids{0, 101, 1});
  CHECK(encode_or_fail(*tok, "<m>y<m>") == Ids{100, 24, 100});
  // "<m>x<" : at position 0 "<m>x" is the longest match; "m>x<" starts later.
  CHECK(encode_or_fail(*tok, "<m>x<") == Ids{101});
}

TEST_CASE("added tokens: matched in the raw text, the rest normalised per section") {
  // Llama-style normaliser: prepend ▁, spaces to ▁. The token itself is
  // never normalised, and each text section gets its own ▁.
  auto tok = load_or_fail(tiny_tokenizer_json(
      letters_model(),
      added(R"({"id": 100, "content": "<s>", "special": true, "normalized": false})") +
          R"(, "normalizer": {"type": "Sequence", "normalizers": [
               {"type": "Prepend", "prepend": "▁"},
               {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})"));
  CHECK(encode_or_fail(*tok, "ab<s>c d") == Ids{27, 0, 1, 100, 27, 2, 27, 3});
  // An empty section stays empty: Prepend adds nothing to "".
  CHECK(encode_or_fail(*tok, "<s>") == Ids{100});
  CHECK(encode_or_fail(*tok, "").empty());
}

TEST_CASE("added tokens: lstrip and rstrip swallow the whitespace around the token") {
  auto tok = load_or_fail(
      tiny_tokenizer_json(letters_model(), added(R"({"id": 100, "content": "<l>", "lstrip": true},
                                 {"id": 101, "content": "<r>", "rstrip": true})")));
  CHECK(encode_or_fail(*tok, "a  <l>  b") == Ids{0, 100, 26, 26, 1});
  CHECK(encode_or_fail(*tok, "a  <r>  b") == Ids{0, 26, 26, 101, 1});
  CHECK(encode_or_fail(*tok, "a\t\n<l>b") == Ids{0, 100, 1});
}

TEST_CASE("added tokens: single_word tokens only match outside words") {
  auto tok = load_or_fail(tiny_tokenizer_json(
      letters_model(), added(R"({"id": 100, "content": "ok", "single_word": true})")));
  CHECK(encode_or_fail(*tok, "ok") == Ids{100});
  CHECK(encode_or_fail(*tok, "a ok b") == Ids{0, 26, 100, 26, 1});
  CHECK(encode_or_fail(*tok, "book") == Ids{1, 14, 14, 10});
  CHECK(encode_or_fail(*tok, "oka") == Ids{14, 10, 0});
}

TEST_CASE("added tokens: normalized tokens are matched in the normalised text") {
  // With an NFC normaliser, a token written in NFC matches NFD input.
  auto tok = load_or_fail(tiny_tokenizer_json(
      letters_model(), added(R"({"id": 100, "content": "é", "normalized": true})") +
                           R"(, "normalizer": {"type": "NFC"})"));
  CHECK(encode_or_fail(*tok, "ae\u0301b") == Ids{0, 100, 1});
  CHECK(encode_or_fail(*tok, "a\u00e9b") == Ids{0, 100, 1});
  // The token's own text is normalised too, as HF does: under a Prepend
  // normaliser the normalized token "x" is found as "▁x".
  auto prepend = load_or_fail(tiny_tokenizer_json(
      letters_model(), added(R"({"id": 100, "content": "x", "normalized": true})") +
                           R"(, "normalizer": {"type": "Sequence", "normalizers": [
                                 {"type": "Prepend", "prepend": "▁"},
                                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})"));
  CHECK(encode_or_fail(*prepend, "a x b") == Ids{27, 0, 100, 27, 1});
  CHECK(encode_or_fail(*prepend, "axb") == Ids{27, 0, 23, 1});
}

TEST_CASE("added tokens: decode keeps or skips special tokens on request") {
  auto tok = load_or_fail(
      tiny_tokenizer_json(letters_model(), added(R"({"id": 100, "content": "<s>", "special": true},
                                 {"id": 101, "content": "<think>", "special": false})") +
                                               R"(, "decoder": {"type": "Fuse"})"));
  const Ids ids{100, 0, 101, 1};
  CHECK(tok->decode(ids, false) == "<s>a<think>b");
  CHECK(tok->decode(ids, true) == "a<think>b");
}

TEST_CASE("added tokens: qwen3 special tokens inside text, and llama2's <s> from the template") {
  if (const Tokenizer* qwen = testing::qwen3()) {
    const Ids ids = encode_or_fail(*qwen, "<|im_start|>user\nhi<|im_end|>");
    CHECK(ids.front() == 151644);
    CHECK(ids.back() == 151645);
    CHECK(qwen->is_special(151644));
    CHECK_FALSE(qwen->is_special(*qwen->token_id("<think>")));
    CHECK(qwen->eos_id() == 151645);
    CHECK_FALSE(qwen->bos_id().has_value());
    CHECK(encode_or_fail(*qwen, "hi", true) == encode_or_fail(*qwen, "hi", false));
    CHECK(qwen->decode(ids, true) == "user\nhi");
  } else {
    MESSAGE("SKIPPED qwen3 part: npm fixtures absent (run deploy/install-deps.sh)");
  }
  if (const Tokenizer* llama = testing::llama2()) {
    CHECK(llama->bos_id() == 1);
    CHECK(llama->eos_id() == 2);
    const Ids raw = encode_or_fail(*llama, "Hello world");
    Ids with_bos = raw;
    with_bos.insert(with_bos.begin(), 1);
    CHECK(encode_or_fail(*llama, "Hello world", true) == with_bos);
    CHECK(llama->decode(with_bos, true) == "Hello world");
    CHECK(llama->decode(with_bos, false) == "<s> Hello world");
  } else {
    MESSAGE("SKIPPED llama2 part: npm fixtures absent (run deploy/install-deps.sh)");
  }
}

}  // namespace dancemoe::tokenizer
