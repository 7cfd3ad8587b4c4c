// Byte sizes as people write them on command lines and in config files, and
// as they are shown back in messages. The one parser and formatter of sizes
// in the project (flags, config keys, device budgets all use it).
//
//   parse_byte_size("1.5G", "--expert-memory") -> 1610612736
//
// K, M, G and T are powers of 1024; an optional trailing "B" or "iB" is
// accepted and case is ignored ("512m", "2GiB", "4kb"). A bare number is
// bytes. Negative, non-finite, empty and out-of-range (>= 2^64) values are
// refused with a message naming `what` (the flag or key), the offending text
// and the expected form. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

Result<uint64_t> parse_byte_size(std::string_view text, std::string_view what);

// "20G,16G" -> one value per comma-separated item (no empty items).
Result<std::vector<uint64_t>> parse_byte_size_list(std::string_view text, std::string_view what);

// "1610612736 bytes (1536.0 MiB)": exact for logs and errors, readable for people.
std::string format_bytes(uint64_t bytes);

}  // namespace dancemoe
