// Where a model runs: the device selection and per-device memory budgets of
// a LocalModel (common/model/local_model.h) and the CLI flags that set them
// (--device, --device-budget, --dense-device, --max-batch-tokens).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::backend {

struct DeviceOptions {
  // "cpu" (the default: CPU kernels and the thread pool), "cuda" (= cuda:0),
  // "cuda:N", or "cuda:N,M,..." for several GPUs of this machine.
  std::string device = "cpu";
  // Bytes each listed GPU may use, in --device order; one value applies to
  // every GPU; empty or 0: all the memory the device has free at load.
  std::vector<uint64_t> budget_bytes;
  // GPU ordinal that holds the dense part (embeddings, attention, routers,
  // LM head), the KV cache and the workspace; default: the first listed.
  std::optional<int> dense_device;
  // Longest batch one device forward takes (longer prompts are split); the
  // workspace is sized for it once, at load.
  int64_t max_batch_tokens = 512;
  // KV-cache positions reserved on the dense device at load (one sequence);
  // 0: min(max_position_embeddings, 4096). Longer or further caches are
  // allocated when made (Transformer::new_cache).
  int64_t kv_cache_tokens = 0;
  // Run MoE layers through the MoeExecutor (routing and activations to the
  // host and back) even when the forward's device holds every expert: what
  // a node with remote experts does; tests use it to check that path.
  bool experts_via_executor = false;
  // GPU decode steps replay a captured CUDA graph (see cuda_forward.h).
  bool cuda_graphs = true;
};

struct DeviceSelection {
  bool cpu = true;
  std::vector<int> cuda_ordinals;  // when !cpu, in --device order, distinct
};

// Parses DeviceOptions::device; the error names the text and the forms expected.
Result<DeviceSelection> parse_device(const std::string& text);

}  // namespace dancemoe::backend
