// The device flags of the `dancemoe` commands that load a model (generate,
// logits, bench) -- the same as the node's: --devices, --device-memory,
// --threads, --max-batch-tokens, turned into backend::DeviceOptions for the
// runtime assembly (common/assembly/model_runtime.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/base/status.h"

namespace CLI {
class App;
}

namespace dancemoe::cli {

struct DeviceFlags {
  std::string devices = "cpu";
  std::vector<std::string> device_memory;  // DEV=BYTES, repeatable
  int threads = 0;
  int64_t max_batch_tokens = 512;
};

void add_device_flags(CLI::App* cmd, DeviceFlags* flags);

// invalid_argument naming the flag for a malformed value.
Result<backend::DeviceOptions> device_options(const DeviceFlags& flags);

}  // namespace dancemoe::cli
