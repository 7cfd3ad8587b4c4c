// The flags of `dancemoe-node` (one struct; main.cpp parses them with CLI11
// through add_node_flags, tests build the struct directly).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/base/status.h"
#include "common/inference/compute_precision.h"
#include "common/inference/kv_cache.h"
#include "common/tensor/dtype.h"
#include "edge_node/migration/migration_executor.h"
#include "kernels/kernels.h"

namespace CLI {
class App;
}

namespace dancemoe::node {

// --role: a full node (prompts over HTTP, its experts for peers) or an
// experts-only one (no dense weights, no HTTP, no activations of its own:
// its experts and weight transfers for the others).
enum class NodeRole { kFull, kExperts };

struct NodeOptions {
  std::string model_dir;
  NodeRole role = NodeRole::kFull;
  std::string node_id;
  std::string cluster_id = "default";  // the scheduler's default too
  std::string scheduler;               // tcp://HOST:PORT: attached mode
  std::string placement_file;          // standalone mode
  // Expert service bind endpoint; default (empty): the --advertise address,
  // else tcp://127.0.0.1:5551 -- never every interface unless asked.
  std::string experts_bind;
  std::string advertise;  // expert endpoint peers use; default: the bound one
  std::string http = "127.0.0.1:8080";
  std::string api_key;  // --api-key or $DANCEMOE_API_KEY; empty: /v1/* is open
  // --served-model-name (repeatable): the names clients use; the first is the
  // one answers carry. Empty: the model directory's name.
  std::vector<std::string> served_model_names;
  size_t max_queued = 64;  // generation requests waiting beyond the running ones (429 above)
  std::string ready_file;
  std::string record_trace;
  int32_t coactivation_pairs = 128;  // per layer and report (ActivationLog); 0: none
  std::string replay_routing;        // a routing trace to replay (routing_replay.h)
  std::string replay_origins;        // which of its origins, in which order
  std::string log_level = "info";

  // --devices, --device-memory and --threads (the threads of a "cpu" device).
  backend::DeviceOptions devices;
  uint64_t expert_memory_bytes = 0;  // 0: what the devices have free (device_budgets.h)

  // Security (docs/security.md): CurveZMQ unless `insecure`.
  std::string secret_key;     // this node's NAME.key
  std::string scheduler_key;  // attached: the scheduler's NAME.pub, pinned
  std::string peer_keys;      // standalone: directory of NODE_ID.pub of the cluster's nodes
  bool insecure = false;
  uint64_t migration_headroom_bytes = 0;  // 0: half the expert budget
  uint64_t offload_cache_bytes = 256ull << 20;
  int service_workers = 1;
  int service_threads = 0;  // per device; 0: as many as the device has
  ComputePrecision precision = ComputePrecision::kBF16;
  KvElement kv_element = KvElement::kF32;          // --kv-type
  std::optional<kernels::WeightType> expert_type;  // --expert-type; nullopt: as stored
  // Quantized weights interleaved for this CPU's kernels where it has them
  // (kernels/interleave.h); false: --rows-layout, the file's rows used in place.
  bool interleave_weights = true;
  DType wire_dtype = DType::kBF16;
  std::chrono::milliseconds call_timeout{1000};
  int call_attempts = 2;
  bool overlap = true;
  // Long prompts: fetch remote experts' weights when cheaper than sending
  // the tokens (edge_node/moe/weight_gathering.h); --no-weight-gathering.
  bool weight_gathering = true;
  uint32_t max_call_tokens = 4096;
  int64_t context_tokens = 4096;
  // Continuous batching (batch_scheduler.h).
  int32_t max_batch = 16;                      // sequences generated together
  uint64_t kv_memory_bytes = 0;                // KV budget; 0: 4 full contexts
  int64_t prefill_chunk = 256;                 // prompt tokens per step
  int32_t stream_interval = 1;                 // steps per streamed chunk
  uint64_t prefix_cache_bytes = 256ull << 20;  // 0: no prefix cache
  std::chrono::milliseconds report_interval{10000};
  bool report_interval_set = false;
  size_t report_buffer = 360;
  ExpertSource expert_source = ExpertSource::kAuto;
  ThrottleOptions throttle;
};

// Registers every flag on `app`, writing into `options` (which must outlive
// parsing). Raw strings (sizes, durations, enums) are converted by finish_node_flags.
struct RawNodeFlags;
std::shared_ptr<RawNodeFlags> add_node_flags(CLI::App& app, NodeOptions* options);
Status finish_node_flags(const RawNodeFlags& raw, NodeOptions* options);

// The expert service's bind endpoint when --experts is not given: the host
// of `advertise` (resolved to an address of this machine) and its port, or
// tcp://127.0.0.1:5551 without --advertise.
Result<std::string> default_experts_bind(const std::string& advertise);

// "10s", "500ms", "2m", "1500" (milliseconds) -> milliseconds.
Result<std::chrono::milliseconds> parse_duration(const std::string& text, const std::string& flag);

}  // namespace dancemoe::node
