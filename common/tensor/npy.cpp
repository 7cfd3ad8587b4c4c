#include "common/tensor/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace dancemoe {

Status write_npy_f32(const std::filesystem::path& path, std::span<const float> data,
                     const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  if (n != data.size()) {
    return invalid_argument("npy: shape holds " + std::to_string(n) + " values but " +
                            std::to_string(data.size()) + " were given");
  }
  std::string dims;  // "3, 4" but "3," for one dimension, as NumPy writes it
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic(6) + version(2) + length(2) + header + '\n' is a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable(path.string() + ": cannot create file");
  const char magic[] = "\x93NUMPY\x01\x00";
  out.write(magic, 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * sizeof(float)));
  out.close();
  if (!out) return unavailable(path.string() + ": write failed");
  return Status::ok();
}

Result<NpyArray> read_npy_f32(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path.string() + ": cannot open file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& what) {
    return invalid_argument(path.string() + ": not a float32 .npy file (" + what + ")");
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return fail("bad magic");
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    header_start = 10;
  } else {
    if (bytes.size() < 12) return fail("truncated");
    header_len = 0;
    for (int i = 3; i >= 0; --i)
      header_len = (header_len << 8) | static_cast<uint8_t>(bytes[8 + static_cast<size_t>(i)]);
    header_start = 12;
  }
  if (header_start + header_len > bytes.size()) return fail("header runs past the end");
  const std::string header = bytes.substr(header_start, header_len);
  if (header.find("'<f4'") == std::string::npos) return fail("dtype is not '<f4'");
  if (header.find("'fortran_order': False") == std::string::npos) return fail("not C order");
  const size_t open = header.find("'shape': (");
  const size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return fail("no shape");
  NpyArray array;
  std::string dims = header.substr(open + 10, close - open - 10);
  size_t pos = 0;
  while (pos < dims.size()) {
    while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ',')) ++pos;
    if (pos >= dims.size()) break;
    size_t end = pos;
    while (end < dims.size() && dims[end] >= '0' && dims[end] <= '9') ++end;
    if (end == pos) return fail("bad shape '" + dims + "'");
    array.shape.push_back(std::stoll(dims.substr(pos, end - pos)));
    pos = end;
  }
  uint64_t n = 1;
  for (int64_t d : array.shape) n *= static_cast<uint64_t>(d);
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != n * sizeof(float)) return fail("data size does not match shape");
  array.data.resize(n);
  std::memcpy(array.data.data(), bytes.data() + data_start, n * sizeof(float));
  return array;
}

}  // namespace dancemoe
