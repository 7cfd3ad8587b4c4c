// The device flags of the `dancemoe` commands that load a model (generate,
// logits, bench): --device, --device-budget, --dense-device,
// --max-batch-tokens, turned into backend::DeviceOptions.
#pragma once

#include <cstdint>
#include <string>

#include "common/backend/device_options.h"
#include "common/base/status.h"

namespace CLI {
class App;
}

namespace dancemoe::cli {

struct DeviceFlags {
  std::string device = "cpu";
  std::string budget;  // "20G" or "20G,16G"
  int dense_device = -1;
  int64_t max_batch_tokens = 512;
};

void add_device_flags(CLI::App* cmd, DeviceFlags* flags);

// invalid_argument naming the flag for a malformed value.
Result<backend::DeviceOptions> device_options(const DeviceFlags& flags);

}  // namespace dancemoe::cli
