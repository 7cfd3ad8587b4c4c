// A chat answer split into reasoning and content, whole or piece by piece,
// with the markers split anywhere.
#include "edge_node/http/reasoning_splitter.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace dancemoe::node {
namespace {

struct Split {
  std::string reasoning;
  std::string content;
};

// Feeds `text` in pieces of `size` characters.
Split split_in_pieces(const std::string& text, size_t size) {
  ReasoningSplitter s;
  Split out;
  for (size_t at = 0; at < text.size(); at += size) {
    const ReasoningSplitter::Delta d = s.feed(std::string_view(text).substr(at, size));
    out.reasoning += d.reasoning;
    out.content += d.content;
  }
  const ReasoningSplitter::Delta d = s.finish();
  out.reasoning += d.reasoning;
  out.content += d.content;
  return out;
}

TEST_CASE("reasoning: thinking between the markers, content after, however the text is cut") {
  const std::string text = "\n<think>\nLet me add 2 and 2.\n</think>\n\nIt is 4.";
  for (size_t size : {1, 2, 3, 5, 7, 100}) {
    CAPTURE(size);
    const Split s = split_in_pieces(text, size);
    CHECK(s.reasoning == "\nLet me add 2 and 2.\n");
    CHECK(s.content == "It is 4.");
  }
}

TEST_CASE("reasoning: an answer that does not start with the open marker is all content") {
  for (const std::string text : {"Hello <think> there", "<thin", "plain", "", "  <b>hi</b>"}) {
    CAPTURE(text);
    for (size_t size : {1, 4, 50}) {
      const Split s = split_in_pieces(text, size);
      CHECK(s.reasoning.empty());
      CHECK(s.content == text);
    }
  }
}

TEST_CASE("reasoning: an unterminated thought stays reasoning, a partial close marker too") {
  const Split s = split_in_pieces("<think>still thinking </thi", 3);
  CHECK(s.reasoning == "still thinking </thi");
  CHECK(s.content.empty());
  // Nothing that could still become the close marker is emitted early.
  ReasoningSplitter streaming;
  CHECK(streaming.feed("<think>abc</").reasoning == "abc");
  CHECK(streaming.feed("think>").empty());
  CHECK(streaming.feed("x").content == "x");
}

TEST_CASE("reasoning: other markers") {
  ReasoningSplitter s({"[THINK]", "[/THINK]"});
  const ReasoningSplitter::Delta d = s.feed("[THINK]a[/THINK]b");
  CHECK(d.reasoning == "a");
  CHECK(d.content == "b");
}

}  // namespace
}  // namespace dancemoe::node
