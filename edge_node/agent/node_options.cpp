#include "edge_node/agent/node_options.h"

#include <netdb.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "common/base/byte_size.h"
#include "common/net/endpoint.h"
#include "kernels/quant_format.h"

namespace dancemoe::node {

struct RawNodeFlags {
  std::string devices = "cpu";
  std::vector<std::string> device_memory;
  std::string expert_memory;
  std::string migration_headroom;
  std::string offload_cache = "256M";
  std::string precision = "bf16";
  std::string expert_type;
  std::string wire_dtype = "bf16";
  std::string call_timeout = "1000ms";
  std::string report_interval = "10s";
  std::string expert_source = "auto";
  std::string migration_rate;
  std::string kv_memory;
  std::string kv_type = "f32";
  std::string prefix_cache = "256M";
  std::string role = "full";
  bool no_overlap = false;
  bool rows_layout = false;
  bool no_weight_gathering = false;
  CLI::Option* report_interval_option = nullptr;
};

namespace {

Status check_node_security(const NodeOptions& o) {
  const bool any_key = !o.secret_key.empty() || !o.scheduler_key.empty() || !o.peer_keys.empty();
  if (o.insecure) {
    if (any_key) {
      return invalid_argument(
          "--insecure with --secret-key/--scheduler-key/--peer-keys: choose keys or --insecure");
    }
    return Status::ok();
  }
  const bool attached = !o.scheduler.empty();
  if (o.secret_key.empty() || (attached && o.scheduler_key.empty()) ||
      (!attached && o.peer_keys.empty())) {
    return invalid_argument(
        std::string("dancemoe-node needs keys: --secret-key FILE and ") +
        (attached ? "--scheduler-key FILE.pub (the scheduler's)"
                  : "--peer-keys DIR (the cluster's nodes, NODE_ID.pub each)") +
        " -- see `dancemoe keys generate` and docs/security.md -- or --insecure to run "
        "without authentication");
  }
  if (attached && !o.peer_keys.empty()) {
    return invalid_argument(
        "--peer-keys is for standalone mode; attached, the scheduler sends "
        "the members' keys");
  }
  return Status::ok();
}

}  // namespace

Result<std::chrono::milliseconds> parse_duration(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  double ms_per_unit = -1;
  if (unit.empty() || unit == "ms") ms_per_unit = 1;
  if (unit == "s") ms_per_unit = 1000;
  if (unit == "m" || unit == "min") ms_per_unit = 60000;
  if (used == 0 || ms_per_unit < 0 || !std::isfinite(value) || value <= 0 ||
      value * ms_per_unit > 1e12) {
    return invalid_argument(
        flag + ": expected a positive duration such as 500ms, 10s or 2m, got '" + text + "'");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(value * ms_per_unit)));
}

Result<std::string> default_experts_bind(const std::string& advertise) {
  if (advertise.empty()) return std::string("tcp://127.0.0.1:5551");
  const std::string prefix = "tcp://";
  const size_t colon = advertise.rfind(':');
  if (advertise.rfind(prefix, 0) != 0 || colon == std::string::npos || colon < prefix.size()) {
    return invalid_argument("--advertise: expected tcp://HOST:PORT, got '" + advertise + "'");
  }
  std::string host = advertise.substr(prefix.size(), colon - prefix.size());
  const std::string port = advertise.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  // ZeroMQ binds addresses and interface names, not DNS names: resolve here.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return invalid_argument("--advertise: cannot resolve host '" + host +
                            "'; pass --experts tcp://ADDRESS:PORT to bind explicitly");
  }
  char text[NI_MAXHOST] = {};
  const int rc = ::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0,
                               NI_NUMERICHOST);
  const bool v6 = found->ai_family == AF_INET6;
  ::freeaddrinfo(found);
  if (rc != 0) return invalid_argument("--advertise: cannot resolve host '" + host + "'");
  return prefix + (v6 ? "[" + std::string(text) + "]" : std::string(text)) + ":" + port;
}

std::shared_ptr<RawNodeFlags> add_node_flags(CLI::App& app, NodeOptions* o) {
  auto raw = std::make_shared<RawNodeFlags>();
  app.add_option("--model", o->model_dir,
                 "this node's copy of the model: a HuggingFace directory, or a .gguf file (or a "
                 "directory holding one, or a split set)")
      ->required();
  app.add_option("--node-id", o->node_id, "this node's id in the cluster (unique, no commas)")
      ->required();
  app.add_option("--cluster-id", o->cluster_id,
                 "cluster id carried in every message; peers of another cluster are refused")
      ->capture_default_str();
  app.add_option("--scheduler", o->scheduler,
                 "attached mode: the scheduler's control endpoint, tcp://HOST:PORT");
  app.add_option("--placement", o->placement_file,
                 "standalone mode: placement file (common/placement/placement_json.h); "
                 "SIGHUP reloads it");
  app.add_option("--experts", o->experts_bind,
                 "expert service bind endpoint (port * or 0: any; default: the --advertise "
                 "address, else tcp://127.0.0.1:5551)");
  app.add_option("--advertise", o->advertise,
                 "expert endpoint peers use to reach this node (default: the bound one)");
  app.add_option("--http", o->http, "HTTP API HOST:PORT (port 0: any)")->capture_default_str();
  app.add_option("--served-model-name", o->served_model_names,
                 "the name clients send as \"model\" (repeatable: aliases; the first is the one "
                 "answers carry; default: the model directory's name)");
  app.add_option("--api-key", o->api_key,
                 "bearer token required on /v1/* (default: $DANCEMOE_API_KEY; empty: open)");
  app.add_option("--max-queued", o->max_queued,
                 "generation requests that may wait for the engine; more get HTTP 429")
      ->capture_default_str();
  app.add_option("--ready-file", o->ready_file,
                 "write JSON with the bound endpoints here once serving");
  app.add_option("--expert-memory", raw->expert_memory,
                 "bytes for resident experts, e.g. 2G (default: available memory minus KV cache, "
                 "workspace and offload cache)");
  app.add_option("--migration-headroom", raw->migration_headroom,
                 "extra expert bytes allowed while a migration holds old and new experts "
                 "(default: half of --expert-memory)");
  app.add_option("--offload-cache", raw->offload_cache,
                 "bytes of the cache for experts computed here when no peer answers (0: off)")
      ->capture_default_str();
  app.add_option("--devices", raw->devices,
                 "devices this node computes on: a comma-separated list of cpu, cpu:N (a NUMA "
                 "node or a slice of the cores) and cuda:N; the dense part goes to the first GPU")
      ->capture_default_str();
  app.add_option("--device-memory", raw->device_memory,
                 "expert memory of one device, DEV=BYTES (repeatable), e.g. cuda:0=20G "
                 "(default: its share of --expert-memory, or what is free on it)");
  app.add_option("--threads", o->devices.n_threads,
                 "compute threads of the cpu device (0: all cores; cpu:N: its cores)")
      ->capture_default_str();
  app.add_option("--service-workers", o->service_workers,
                 "expert-service worker threads (each computes one peer call at a time)")
      ->capture_default_str();
  app.add_option("--service-threads", o->service_threads,
                 "compute threads per expert-service worker (0: as --threads)")
      ->capture_default_str();
  app.add_option("--precision", raw->precision, "activation precision: bf16 or f32")
      ->capture_default_str();
  app.add_option("--expert-type", raw->expert_type,
                 "hold experts in this format, quantizing them at load from the model files: "
                 "q8_0, q4_0, q4_K, q5_K, q6_K, mxfp4, bf16, f16 or f32 (default: as stored); the "
                 "node reports it, and the sizes it holds, to the scheduler");
  app.add_option("--wire-dtype", raw->wire_dtype, "hidden states on the wire: bf16 or f32")
      ->capture_default_str();
  app.add_option("--call-timeout-ms", raw->call_timeout,
                 "deadline of one remote expert call before trying another replica")
      ->capture_default_str();
  app.add_option("--call-attempts", o->call_attempts,
                 "replicas tried per expert before the offload cache")
      ->capture_default_str();
  app.add_flag("--no-overlap", raw->no_overlap,
               "wait for remote experts before computing local ones (benchmarks)");
  app.add_flag("--no-weight-gathering", raw->no_weight_gathering,
               "always send a remote expert's tokens, never fetch its weights into the offload "
               "cache for a long prompt");
  app.add_option("--max-call-tokens", o->max_call_tokens,
                 "tokens per expert call, served and sent (larger sets are split)")
      ->capture_default_str();
  app.add_option("--context", o->context_tokens, "context length (prompt + generated tokens)")
      ->capture_default_str();
  app.add_option("--max-batch", o->max_batch,
                 "sequences generated together (continuous batching; 1 on backends that cannot "
                 "batch sequences)")
      ->capture_default_str();
  app.add_option("--kv-memory", raw->kv_memory,
                 "KV cache budget of the running sequences, e.g. 2G (default: 4 full contexts); "
                 "admission waits while it is full");
  app.add_flag(
      "--rows-layout", raw->rows_layout,
      "keep Q4_K / Q5_K / Q6_K / Q8_0 weights in the file's rows, used in place, instead of "
      "copies interleaved for this CPU's faster kernels (AVX-512 VNNI): a faster start "
      "and a smaller RSS, a slower decode");
  app.add_option("--kv-type", raw->kv_type,
                 "what the KV cache stores: f32, or bf16 (half the memory per position, so twice "
                 "the sequences in --kv-memory; keys and values rounded to bf16)")
      ->capture_default_str();
  app.add_option("--prefill-chunk", o->prefill_chunk,
                 "prompt tokens prefilled per step, interleaved with the running streams' tokens")
      ->capture_default_str();
  app.add_option("--stream-interval", o->stream_interval,
                 "under load, hand each stream's text to its connection every N steps (its "
                 "first token and its end at once): fewer wakeups of request threads and "
                 "clients per step, at N tokens per chunk")
      ->capture_default_str();
  app.add_option("--prefix-cache", raw->prefix_cache,
                 "memory for the KV of finished sequences reused by prompts that start alike "
                 "(0: off)")
      ->capture_default_str();
  raw->report_interval_option =
      app.add_option("--report-interval", raw->report_interval,
                     "activation report period, e.g. 10s (default: the scheduler's, else 10s)");
  app.add_option("--report-buffer", o->report_buffer,
                 "reports kept while the scheduler is unreachable (oldest dropped)")
      ->capture_default_str();
  app.add_option("--record-trace", o->record_trace,
                 "write per-token routing to this CSV (simulator trace format)");
  app.add_option("--replay-routing", o->replay_routing,
                 "benchmarks: take expert choices from this routing trace, not the router");
  app.add_option("--replay-origins", o->replay_origins,
                 "with --replay-routing: ORIGIN,... -- a request whose first prompt token is t "
                 "replays origin t mod (the number listed)");
  app.add_option("--coactivation-pairs", o->coactivation_pairs,
                 "co-activation pairs reported per layer and window (0: none)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--role", raw->role,
                 "full (prompts and experts) or experts (no dense weights and no HTTP: only its "
                 "experts and weight transfers for the other nodes; CPU devices)")
      ->capture_default_str();
  app.add_option("--expert-source", raw->expert_source,
                 "where migrations load experts: local (files), peer (fetch), auto (files, else "
                 "a peer)")
      ->capture_default_str();
  app.add_option("--migration-latency-bound", o->throttle.latency_bound,
                 "allowed relative increase of per-token latency while a migration loads")
      ->capture_default_str();
  app.add_option("--migration-rate", raw->migration_rate,
                 "cap on migration loading, bytes per second (e.g. 200M; default: none)");
  app.add_option("--log-level", o->log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_option("--secret-key", o->secret_key,
                 "this node's CURVE secret key file, NAME.key (dancemoe keys generate)");
  app.add_option("--scheduler-key", o->scheduler_key,
                 "attached: the scheduler's public key file, NAME.pub (pinned)");
  app.add_option("--peer-keys", o->peer_keys,
                 "standalone: directory of the cluster's node keys, NODE_ID.pub each");
  app.add_flag("--insecure", o->insecure,
               "no CurveZMQ and no keys: anyone reaching the expert port may call experts and "
               "download weights (warned every minute)");
  return raw;
}

Status finish_node_flags(const RawNodeFlags& raw, NodeOptions* o) {
  if (o->replay_routing.empty() != o->replay_origins.empty()) {
    return invalid_argument("--replay-routing and --replay-origins go together");
  }
  if (o->scheduler.empty() == o->placement_file.empty()) {
    return invalid_argument(
        "give exactly one of --scheduler tcp://HOST:PORT (attached) or --placement FILE "
        "(standalone)");
  }
  if (o->node_id.find(',') != std::string::npos || o->node_id.empty()) {
    return invalid_argument("--node-id: must be non-empty and contain no comma");
  }
  // Every address is checked here, before anything slow happens.
  if (!o->scheduler.empty()) {
    DMOE_RETURN_IF_ERROR(net::parse_tcp_endpoint("--scheduler", o->scheduler).status());
  }
  if (!o->experts_bind.empty()) {  // empty: derived from --advertise below
    DMOE_RETURN_IF_ERROR(net::parse_tcp_endpoint("--experts", o->experts_bind, true).status());
  }
  if (!o->advertise.empty()) {
    DMOE_RETURN_IF_ERROR(net::parse_tcp_endpoint("--advertise", o->advertise).status());
  }
  DMOE_RETURN_IF_ERROR(net::parse_http_address("--http", o->http, true).status());
  DMOE_ASSIGN_OR_RETURN(o->devices.devices, backend::parse_device_list(raw.devices));
  for (const std::string& item : raw.device_memory) {
    DMOE_RETURN_IF_ERROR(backend::parse_device_memory(item, &o->devices));
  }
  if (!raw.expert_memory.empty()) {
    DMOE_ASSIGN_OR_RETURN(o->expert_memory_bytes,
                          parse_byte_size(raw.expert_memory, "--expert-memory"));
  }
  if (!raw.migration_headroom.empty()) {
    DMOE_ASSIGN_OR_RETURN(o->migration_headroom_bytes,
                          parse_byte_size(raw.migration_headroom, "--migration-headroom"));
  }
  DMOE_ASSIGN_OR_RETURN(o->offload_cache_bytes,
                        parse_byte_size(raw.offload_cache, "--offload-cache"));
  if (!raw.kv_memory.empty()) {
    DMOE_ASSIGN_OR_RETURN(o->kv_memory_bytes, parse_byte_size(raw.kv_memory, "--kv-memory"));
    if (o->kv_memory_bytes == 0) return invalid_argument("--kv-memory: must be more than 0");
  }
  DMOE_ASSIGN_OR_RETURN(o->prefix_cache_bytes, parse_byte_size(raw.prefix_cache, "--prefix-cache"));
  std::optional<ComputePrecision> precision = parse_precision(raw.precision);
  if (!precision)
    return invalid_argument("--precision: expected bf16 or f32, got '" + raw.precision + "'");
  o->precision = *precision;
  const std::optional<KvElement> kv_element = parse_kv_element(raw.kv_type);
  if (!kv_element) {
    return invalid_argument("--kv-type: expected f32 or bf16, got '" + raw.kv_type + "'");
  }
  o->kv_element = *kv_element;
  if (!raw.expert_type.empty()) {
    kernels::WeightType type;
    if (!kernels::parse_weight_type(raw.expert_type, &type)) {
      return invalid_argument(
          "--expert-type: expected q8_0, q4_0, q4_K, q5_K, q6_K, mxfp4, bf16, f16 "
          "or f32, got '" +
          raw.expert_type + "'");
    }
    o->expert_type = type;
  }
  if (raw.wire_dtype == "bf16") {
    o->wire_dtype = DType::kBF16;
  } else if (raw.wire_dtype == "f32") {
    o->wire_dtype = DType::kF32;
  } else {
    return invalid_argument("--wire-dtype: expected bf16 or f32, got '" + raw.wire_dtype + "'");
  }
  DMOE_ASSIGN_OR_RETURN(o->call_timeout, parse_duration(raw.call_timeout, "--call-timeout-ms"));
  o->report_interval_set =
      raw.report_interval_option != nullptr && raw.report_interval_option->count() > 0;
  DMOE_ASSIGN_OR_RETURN(o->report_interval,
                        parse_duration(raw.report_interval, "--report-interval"));
  if (raw.expert_source == "local") {
    o->expert_source = ExpertSource::kLocal;
  } else if (raw.expert_source == "peer") {
    o->expert_source = ExpertSource::kPeer;
  } else if (raw.expert_source == "auto") {
    o->expert_source = ExpertSource::kAuto;
  } else {
    return invalid_argument("--expert-source: expected local, peer or auto, got '" +
                            raw.expert_source + "'");
  }
  if (raw.role == "full") {
    o->role = NodeRole::kFull;
  } else if (raw.role == "experts") {
    o->role = NodeRole::kExperts;
    if (o->devices.first_cuda() >= 0) {
      return invalid_argument("--role experts: computes on CPU devices only for now; --devices " +
                              raw.devices + " names a GPU");
    }
  } else {
    return invalid_argument("--role: expected full or experts, got '" + raw.role + "'");
  }
  if (!raw.migration_rate.empty()) {
    DMOE_ASSIGN_OR_RETURN(uint64_t rate, parse_byte_size(raw.migration_rate, "--migration-rate"));
    o->throttle.max_bytes_per_s = static_cast<double>(rate);
  }
  o->overlap = !raw.no_overlap;
  o->interleave_weights = !raw.rows_layout;
  o->weight_gathering = !raw.no_weight_gathering;
  if (o->devices.n_threads < 0 || o->service_threads < 0 || o->service_workers < 1) {
    return invalid_argument("--threads/--service-threads must be >= 0 and --service-workers >= 1");
  }
  if (o->call_attempts < 1) return invalid_argument("--call-attempts: must be at least 1");
  if (o->max_call_tokens < 1) return invalid_argument("--max-call-tokens: must be at least 1");
  if (o->context_tokens < 2) return invalid_argument("--context: must be at least 2");
  if (o->max_batch < 1 || o->max_batch > 256) {
    return invalid_argument("--max-batch: expected 1 to 256, got " + std::to_string(o->max_batch));
  }
  if (o->prefill_chunk < 1) return invalid_argument("--prefill-chunk: must be at least 1");
  if (o->stream_interval < 1 || o->stream_interval > 64) {
    return invalid_argument("--stream-interval: expected 1 to 64 steps, got " +
                            std::to_string(o->stream_interval));
  }
  if (o->api_key.empty()) {
    if (const char* key = std::getenv("DANCEMOE_API_KEY")) o->api_key = key;
  }
  if (o->max_queued > 100000) return invalid_argument("--max-queued: at most 100000");
  DMOE_RETURN_IF_ERROR(check_node_security(*o));
  if (o->experts_bind.empty()) {
    DMOE_ASSIGN_OR_RETURN(o->experts_bind, default_experts_bind(o->advertise));
  }
  for (const std::string& name : o->served_model_names) {
    if (name.empty() || name.size() > 256 || name.find_first_of(" \t\r\n/") != std::string::npos) {
      return invalid_argument("--served-model-name '" + name +
                              "': expected 1 to 256 characters without spaces or '/'");
    }
  }
  if (!(o->throttle.latency_bound > 0)) {
    return invalid_argument("--migration-latency-bound: must be > 0");
  }
  return Status::ok();
}

}  // namespace dancemoe::node
