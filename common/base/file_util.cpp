#include "common/base/file_util.h"

#include <fstream>
#include <sstream>

namespace dancemoe {

Result<std::string> read_file(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes) {
    return invalid_argument(path.string() + ": " + std::to_string(size) +
                            " bytes is larger than the " + std::to_string(max_bytes) +
                            " this file may have");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path.string() + ": cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return unavailable(path.string() + ": read failed");
  return text.str();
}

Status write_file(const std::filesystem::path& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return unavailable(path.string() + ": cannot write file");
  return Status::ok();
}

}  // namespace dancemoe
