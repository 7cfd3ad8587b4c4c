#include "common/model/safetensors_writer.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace dancemoe {

uint64_t TensorSpec::n_elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

Status write_safetensors(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                         const TensorFill& fill,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    header[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.n_bytes()}}};
    offset += t.n_bytes();
  }
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned, as the
  // reference writer does.
  while ((8 + text.size()) % 8 != 0) text += ' ';

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable(path.string() + ": cannot create file");
  uint8_t length[8];
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(n >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<uint8_t> buffer;
  for (size_t i = 0; i < tensors.size(); ++i) {
    buffer.resize(tensors[i].n_bytes());
    fill(i, buffer);
    out.write(reinterpret_cast<const char*>(buffer.data()),
              static_cast<std::streamsize>(buffer.size()));
    if (!out) return unavailable(path.string() + ": write failed (disk full?)");
  }
  out.close();
  if (!out) return unavailable(path.string() + ": write failed on close");
  return Status::ok();
}

}  // namespace dancemoe
