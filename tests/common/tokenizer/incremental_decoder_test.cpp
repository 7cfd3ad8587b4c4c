// Streaming detokenization: pieces are always valid UTF-8, a character split
// across tokens appears whole, and the pieces add up to decode(all ids).
#include "common/tokenizer/incremental_decoder.h"

#include <doctest/doctest.h>

#include <random>

#include "common/base/json_field.h"
#include "common/tokenizer/utf8.h"
#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

// Streams `ids` and checks every piece; returns the concatenation.
std::string stream(const Tokenizer& tok, const Ids& ids, bool skip_special) {
  IncrementalDecoder decoder(tok, skip_special);
  std::string all;
  for (int32_t id : ids) {
    const std::string piece = decoder.push(id);
    CHECK(utf8_is_valid(piece));
    all += piece;
  }
  const std::string rest = decoder.flush();
  CHECK(utf8_is_valid(rest));
  return all + rest;
}

void check_corpus_streams(const Tokenizer& tok) {
  for (const std::string& text :
       testing::read_json_string_lines(testing::tokenizer_fixture_dir() / "corpus.jsonl")) {
    const Ids ids = testing::encode_or_fail(tok, text, true);
    for (bool skip : {false, true}) {
      const std::string streamed = stream(tok, ids, skip);
      CHECK_MESSAGE(streamed == tok.decode(ids, skip), json_quote(text));
    }
  }
}

// Random ids (fixed seed), including ones that split characters and special
// tokens: the stream must still equal the full decode wherever that is
// valid text without U+FFFD.
void check_random_streams(const Tokenizer& tok) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> any_id(0, tok.vocab_size() - 1);
  int n_compared = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Ids ids(1 + rng() % 24);
    for (int32_t& id : ids) id = any_id(rng);
    const std::string full = tok.decode(ids, true);
    const std::string streamed = stream(tok, ids, true);
    if (full.find("\xEF\xBF\xBD") == std::string::npos) {
      CHECK(streamed == full);
      ++n_compared;
    }
  }
  CHECK(n_compared > 50);
}

}  // namespace

TEST_CASE("incremental decoder: an emoji split over byte-level tokens appears once, whole") {
  const Tokenizer& tok = testing::synthetic();
  // The synthetic vocabulary has no emoji merges: 😀 is four byte tokens.
  const Ids ids = testing::encode_or_fail(tok, "a😀b");
  REQUIRE(ids.size() == 6);
  IncrementalDecoder decoder(tok);
  CHECK(decoder.push(ids[0]) == "a");
  CHECK(decoder.push(ids[1]).empty());
  CHECK(decoder.push(ids[2]).empty());
  CHECK(decoder.push(ids[3]).empty());
  CHECK(decoder.push(ids[4]) == "😀");
  CHECK(decoder.push(ids[5]) == "b");
  CHECK(decoder.flush().empty());
}

TEST_CASE("incremental decoder: flush releases an unfinished character as U+FFFD") {
  const Tokenizer& tok = testing::synthetic();
  const Ids ids = testing::encode_or_fail(tok, "x你");  // 你 = E4 BD A0
  REQUIRE(ids.size() == 4);
  IncrementalDecoder decoder(tok);
  CHECK(decoder.push(ids[0]) == "x");
  CHECK(decoder.push(ids[1]).empty());
  CHECK(decoder.push(ids[2]).empty());
  CHECK(decoder.flush() == "\xEF\xBF\xBD");
  // After flush the decoder starts afresh.
  CHECK(decoder.push(ids[0]) == "x");
}

TEST_CASE("incremental decoder: tokens that all straddle character boundaries still stream") {
  // 你 is E4 BD A0, in the byte-level alphabet "ä½ł". Token 2 ends every
  // character and starts the next, so no window ever ends complete.
  auto tok = testing::load_or_fail(
      testing::tiny_tokenizer_json(R"("vocab": {"ä": 0, "½ł": 1, "½łä": 2}, "merges": [])",
                                   R"("decoder": {"type": "ByteLevel"})"));
  Ids ids{0};
  for (int i = 0; i < 20; ++i) ids.push_back(2);
  ids.push_back(1);
  std::string expected;
  for (int i = 0; i < 21; ++i) expected += "你";
  IncrementalDecoder decoder(*tok);
  std::string streamed;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = decoder.push(ids[i]);
    CHECK(utf8_is_valid(piece));
    // Each token after the first completes one character.
    CHECK(piece == (i == 0 ? "" : "你"));
    streamed += piece;
  }
  CHECK(streamed + decoder.flush() == expected);
}

TEST_CASE("incremental decoder: a long run of skipped ids keeps the context of the text") {
  // Llama's decoder strips the first space of the whole text only: after
  // "a", a later "▁b" must still give " b", however many unknown or skipped
  // special ids come between (found by the fuzz target).
  auto tok = testing::load_or_fail(testing::tiny_tokenizer_json(
      R"("vocab": {"<s>": 0, "a": 1, "▁b": 2}, "merges": [])",
      R"("added_tokens": [{"id": 0, "content": "<s>", "special": true}],
         "decoder": {"type": "Sequence", "decoders": [
           {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
           {"type": "ByteFallback"}, {"type": "Fuse"},
           {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})"));
  Ids ids{1};
  for (int i = 0; i < 3 * static_cast<int>(IncrementalDecoder::kMaxWindowTokens); ++i) {
    ids.push_back(i % 2 == 0 ? 0 : 1000 + i);
  }
  ids.push_back(2);
  CHECK(tok->decode(ids, true) == "a b");
  CHECK(stream(*tok, ids, true) == "a b");
}

TEST_CASE("incremental decoder: special tokens are skipped or kept as asked") {
  const Tokenizer& tok = testing::synthetic();
  const Ids ids = testing::encode_or_fail(tok, "<|im_start|>hi<|im_end|>");
  CHECK(stream(tok, ids, true) == "hi");
  CHECK(stream(tok, ids, false) == "<|im_start|>hi<|im_end|>");
}

TEST_CASE("incremental decoder: streams equal decode() on the corpus and random ids (synthetic)") {
  check_corpus_streams(testing::synthetic());
  check_random_streams(testing::synthetic());
}

TEST_CASE("incremental decoder: streams equal decode() with qwen3 and llama2") {
  const Tokenizer* qwen = testing::qwen3();
  const Tokenizer* llama = testing::llama2();
  if (qwen == nullptr || llama == nullptr) {
    MESSAGE("SKIPPED: npm fixtures absent (run deploy/install-deps.sh)");
    return;
  }
  check_corpus_streams(*qwen);
  check_random_streams(*qwen);
  // Llama's decoder strips the text's first space only; byte-fallback
  // tokens carry one byte each.
  check_corpus_streams(*llama);
  check_random_streams(*llama);
  const Ids ids = testing::encode_or_fail(*llama, "Hi 🚀 there", true);
  IncrementalDecoder decoder(*llama);
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(decoder.push(id));
  CHECK(pieces.front().empty());  // <s>, skipped
  CHECK(pieces[1] == "Hi");       // no leading space: first word of the text
  std::string joined;
  for (const std::string& p : pieces) joined += p;
  CHECK(joined + decoder.flush() == "Hi 🚀 there");
}

}  // namespace dancemoe::tokenizer
