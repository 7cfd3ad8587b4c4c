// Fuzz target: the GGUF parser must return a Status -- never crash, hang,
// read out of bounds or allocate beyond the input's size -- for any bytes;
// what it accepts must be internally consistent, and the metadata readers
// behind it (config and tokenizer from the metadata) must cope with whatever
// values an accepted file carries.
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/model/gguf/gguf_config.h"
#include "common/model/gguf/gguf_file.h"
#include "common/model/gguf/gguf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto file = dancemoe::gguf::parse_gguf(bytes, "fuzz.gguf");
  if (!file.is_ok()) return 0;
  if (file->data_offset > size) __builtin_trap();
  for (const auto& t : file->tensors) {
    if (file->data_offset + t.offset + t.n_bytes > size) __builtin_trap();
    if (t.offset % file->alignment != 0) __builtin_trap();
    if (t.dims.empty() || t.dims.size() > 4) __builtin_trap();
  }
  (void)dancemoe::gguf::config_json_from_gguf(*file, "fuzz.gguf");
  (void)dancemoe::gguf::tokenizer_from_gguf(*file, "fuzz.gguf");
  return 0;
}
