// The device flags of the `dancemoe` commands that load a model (generate,
// logits, bench) -- the same as the node's: --devices, --device-memory,
// --threads, --max-batch-tokens, --expert-type, turned into
// backend::DeviceOptions / RuntimeOptions for the runtime assembly
// (common/assembly/model_runtime.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"
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
  std::string expert_type;      // --expert-type: "" keeps the stored format
  bool copy_weights = false;    // --copy-weights: a GGUF's weights copied, not used in place
  bool rows_layout = false;     // --rows-layout: no copies interleaved for the CPU kernels
  std::string kv_type = "f32";  // --kv-type: what CPU KV caches store
};

void add_device_flags(CLI::App* cmd, DeviceFlags* flags);

// invalid_argument naming the flag for a malformed value.
Result<backend::DeviceOptions> device_options(const DeviceFlags& flags);

// Fills the device options, --expert-type and --kv-type of a RuntimeOptions.
Status apply_device_flags(const DeviceFlags& flags, RuntimeOptions* options);

}  // namespace dancemoe::cli
