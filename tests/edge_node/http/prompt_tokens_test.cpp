#include "edge_node/http/prompt_tokens.h"

#include <doctest/doctest.h>

#include <string>

namespace dancemoe::node {
namespace {

// A tokenizer stand-in: one token per word, counting the bytes it was given.
struct WordCounter {
  size_t bytes_seen = 0;
  Result<std::vector<int32_t>> operator()(const std::string& text) {
    bytes_seen += text.size();
    std::vector<int32_t> ids;
    bool in_word = false;
    for (char c : text) {
      const bool space = c == ' ';
      if (!space && !in_word) ids.push_back(static_cast<int32_t>(ids.size()));
      in_word = !space;
    }
    return ids;
  }
};

}  // namespace

TEST_CASE("prompt tokens: a short text is tokenized whole") {
  WordCounter counter;
  auto r = tokenize_within("a b c", 10, std::ref(counter));
  REQUIRE(r.is_ok());
  CHECK(r->complete);
  CHECK(r->ids.size() == 3);
  auto over = tokenize_within("a b c d", 3, std::ref(counter));
  REQUIRE(over.is_ok());
  CHECK_FALSE(over->complete);
  CHECK(over->at_least == 4);
}

TEST_CASE("prompt tokens: a huge text is refused after tokenizing a bounded prefix") {
  std::string huge;
  for (int i = 0; i < 2'000'000; ++i) huge += "ab ";  // 6 MB, 2M words
  WordCounter counter;
  auto r = tokenize_within(huge, 4096, std::ref(counter));
  REQUIRE(r.is_ok());
  CHECK_FALSE(r->complete);
  CHECK(r->at_least > 4096);
  CHECK(counter.bytes_seen < 200'000);  // not the 6 MB
}

TEST_CASE("prompt tokens: a text just under the limit is not refused by a prefix") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "abcdefghijklmnop ";  // 1000 words, 17 kB
  WordCounter counter;
  auto r = tokenize_within(text, 1000, std::ref(counter));
  REQUIRE(r.is_ok());
  CHECK(r->complete);
  CHECK(r->ids.size() == 1000);
}

}  // namespace dancemoe::node
