// UTF-8 helpers shared by the tokenizer pipeline: decoding one code point,
// appending one, and the lossy conversion of arbitrary bytes to valid UTF-8.
//
// Lossy conversion replaces every "maximal subpart" of an ill-formed sequence
// with U+FFFD, the policy of Unicode §3.9 (U+FFFD substitution of maximal
// subparts) that WHATWG TextDecoder, Python's errors="replace" and Rust's
// String::from_utf8_lossy all follow, so invalid bytes are treated the same
// way as in the HF stacks. Surrogates (ED A0..BF xx) and overlongs are
// ill-formed. All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dancemoe::tokenizer {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the well-formed sequence starting at text[pos], or 0 when the
// bytes there are not a complete, well-formed UTF-8 sequence.
size_t utf8_sequence_length(std::string_view text, size_t pos);

// Decodes the well-formed sequence at text[pos] (caller checked its length).
char32_t utf8_decode_at(std::string_view text, size_t pos, size_t length);

// Length of the maximal subpart of an ill-formed sequence at text[pos]
// (at least 1): the bytes that one U+FFFD replaces.
size_t utf8_maximal_subpart(std::string_view text, size_t pos);

void utf8_append(std::string& out, char32_t code_point);

bool utf8_is_valid(std::string_view text);

// `text` unchanged when valid, else with each maximal ill-formed subpart
// replaced by U+FFFD.
std::string utf8_make_valid(std::string_view text);

// The Unicode White_Space property (Rust's char::is_whitespace).
bool is_white_space(char32_t code_point);

// True when `text` ends with U+FFFD.
bool utf8_ends_with_replacement(std::string_view text);

}  // namespace dancemoe::tokenizer
