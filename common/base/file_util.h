// Whole-file reads and writes with errors that name the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace dancemoe {

// not_found when the file cannot be opened; invalid_argument when it is
// larger than max_bytes (a wrong path pointing at a weights file, say).
Result<std::string> read_file(const std::filesystem::path& path, uint64_t max_bytes = UINT64_MAX);

// Replaces the file's contents; unavailable when it cannot be written.
Status write_file(const std::filesystem::path& path, std::string_view contents);

}  // namespace dancemoe
