#include "common/tokenizer/byte_level.h"

#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

struct Tables {
  std::array<char32_t, 256> byte_to_char{};
  // Inverse over the code points used (all < 0x144); -1 marks "not a byte".
  std::array<int16_t, 0x144> char_to_byte{};
  std::array<std::string, 256> byte_to_utf8{};

  Tables() {
    char_to_byte.fill(-1);
    // Bytes that are printable and not whitespace in Latin-1 stand for
    // themselves: '!'..'~', '¡'..'¬', '®'..'ÿ'. The rest (controls, space,
    // DEL, NBSP, soft hyphen...) get U+0100, U+0101, ... in byte order.
    auto keeps_itself = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next_shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = keeps_itself(b) ? static_cast<char32_t>(b)
                                          : static_cast<char32_t>(0x100 + next_shifted++);
      byte_to_char[static_cast<size_t>(b)] = cp;
      char_to_byte[cp] = static_cast<int16_t>(b);
      utf8_append(byte_to_utf8[static_cast<size_t>(b)], cp);
    }
  }
};

const Tables& tables() {
  static const Tables kTables;
  return kTables;
}

}  // namespace

char32_t byte_to_char(uint8_t byte) { return tables().byte_to_char[byte]; }

std::optional<uint8_t> char_to_byte(char32_t code_point) {
  if (code_point >= tables().char_to_byte.size()) return std::nullopt;
  const int16_t b = tables().char_to_byte[code_point];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::string bytes_to_byte_level(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.byte_to_utf8[static_cast<uint8_t>(c)];
  return out;
}

void byte_level_to_bytes(std::string_view token, std::string& out) {
  const size_t mark = out.size();
  size_t pos = 0;
  while (pos < token.size()) {
    const size_t length = utf8_sequence_length(token, pos);
    std::optional<uint8_t> byte;
    if (length > 0) byte = char_to_byte(utf8_decode_at(token, pos, length));
    if (!byte) {
      out.resize(mark);
      out.append(token);
      return;
    }
    out.push_back(static_cast<char>(*byte));
    pos += length;
  }
}

}  // namespace dancemoe::tokenizer
