// UTF-8 helpers and the byte-level alphabet; invalid input text is repaired
// deterministically (U+FFFD per maximal ill-formed subpart), never a crash.
#include "common/tokenizer/utf8.h"

#include <doctest/doctest.h>

#include <random>

#include "common/tokenizer/byte_level.h"
#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {

TEST_CASE("utf8: ill-formed sequences become one U+FFFD per maximal subpart") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(utf8_make_valid("abc") == "abc");
  CHECK(utf8_make_valid("héllo 😀") == "héllo 😀");
  CHECK(utf8_make_valid("\xE4\xBD"
                        "a") == r + "a");                       // truncated 3-byte sequence
  CHECK(utf8_make_valid("\xF0\x9F\x98") == r);                  // truncated at the end
  CHECK(utf8_make_valid("\xC0\xAF") == r + r);                  // overlong: two subparts
  CHECK(utf8_make_valid("\xED\xA0\x80") == r + r + r);          // surrogate D800
  CHECK(utf8_make_valid("\xF4\x90\x80\x80") == r + r + r + r);  // above U+10FFFF
  CHECK(utf8_make_valid("a\xFF"
                        "b\x80") == "a" + r + "b" + r);
  CHECK(utf8_is_valid(std::string("a\0b", 3)));
  CHECK_FALSE(utf8_is_valid("\xC3"));
  CHECK(utf8_ends_with_replacement("x" + r));
  CHECK_FALSE(utf8_ends_with_replacement("x"));
}

TEST_CASE("utf8: White_Space is Unicode's property, not ASCII only") {
  for (char32_t cp : {U'\t', U'\n', U'\r', U' ', U'\u0085', U'\u00A0', U'\u2003', U'\u3000'}) {
    CHECK(is_white_space(cp));
  }
  for (char32_t cp : {U'a', U'\u200B', U'\uFEFF', U'\u180E'}) CHECK_FALSE(is_white_space(cp));
}

TEST_CASE("byte level: all 256 bytes map to distinct printable code points and back") {
  CHECK(byte_to_char(' ') == U'\u0120');   // Ġ
  CHECK(byte_to_char('\n') == U'\u010A');  // Ċ
  CHECK(byte_to_char('a') == U'a');
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) {
    all_bytes.push_back(static_cast<char>(b));
    CHECK(char_to_byte(byte_to_char(static_cast<uint8_t>(b))) == b);
  }
  std::string back;
  byte_level_to_bytes(bytes_to_byte_level(all_bytes), back);
  CHECK(back == all_bytes);
  // A token with a character outside the alphabet is passed through as is.
  back.clear();
  byte_level_to_bytes("a€", back);
  CHECK(back == "a€");
}

TEST_CASE("tokenizer: invalid UTF-8 input encodes as its U+FFFD repair, deterministically") {
  const Tokenizer& tok = testing::synthetic();
  const std::string bad = "ok\xC3(\xFF\xFE end\xE2\x82";
  const std::vector<int32_t> ids = testing::encode_or_fail(tok, bad);
  CHECK(ids == testing::encode_or_fail(tok, utf8_make_valid(bad)));
  CHECK(tok.decode(ids, false) == utf8_make_valid(bad));
  // Random bytes (fixed seed) never crash and always decode to valid UTF-8.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::vector<int32_t> random_ids = testing::encode_or_fail(tok, bytes);
    CHECK(utf8_is_valid(tok.decode(random_ids, false)));
  }
}

}  // namespace dancemoe::tokenizer
