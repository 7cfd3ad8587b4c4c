// The GPT-2 byte-level alphabet: every byte 0..255 is shown as one printable
// code point (printable Latin-1 bytes as themselves, the others as U+0100 +
// n, e.g. space 0x20 -> U+0120 'Ġ', '\n' -> U+010A 'Ċ'), so that BPE can run
// on arbitrary bytes with a vocabulary of visible strings. Used by the
// ByteLevel pre-tokenizer, the ByteLevel decoder and the synthetic tokenizer.
// Tables are built once at static initialisation; all functions are pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dancemoe::tokenizer {

// The code point that stands for `byte`.
char32_t byte_to_char(uint8_t byte);

// The byte that `code_point` stands for, or nullopt if it is not in the
// byte-level alphabet.
std::optional<uint8_t> char_to_byte(char32_t code_point);

// Maps every byte of `bytes` to its code point, UTF-8 encoded.
std::string bytes_to_byte_level(std::string_view bytes);

// Inverse of bytes_to_byte_level for one token, following HF's ByteLevel
// decoder: if any code point of `token` is outside the alphabet, the token's
// own UTF-8 bytes are used unchanged. Appends to `out`.
void byte_level_to_bytes(std::string_view token, std::string& out);

}  // namespace dancemoe::tokenizer
