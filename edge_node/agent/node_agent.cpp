#include "edge_node/agent/node_agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <optional>

#include "common/net/curve_keys.h"
#include "common/placement/placement_json.h"
#include "edge_node/agent/node_preflight.h"
#include "edge_node/agent/node_resources.h"
#include "kernels/quant_format.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

std::string advertised_endpoint(const std::string& flag, const std::string& bound) {
  if (!flag.empty()) return flag;
  const std::string any = "0.0.0.0";
  const size_t at = bound.find(any);
  if (at == std::string::npos) return bound;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return bound;
  return bound.substr(0, at) + host + bound.substr(at + any.size());
}

}  // namespace

NodeAgent::NodeAgent(const NodeOptions& options)
    : options_(options),
      parts_(std::make_unique<NodeParts>()),
      backend_(std::make_unique<NodeHttpBackend>(options_, *parts_)) {}

NodeAgent::~NodeAgent() { stop(); }

void NodeAgent::stop() {
  if (!parts_) return;
  if (parts_->link) parts_->link->stop();
  if (parts_->http) parts_->http->stop();
  if (parts_->service) parts_->service->stop();
  parts_->migration.reset();  // cancels a load in progress
}

Result<std::unique_ptr<NodeAgent>> NodeAgent::start(const NodeOptions& options) {
  std::unique_ptr<NodeAgent> agent(new NodeAgent(options));
  DMOE_RETURN_IF_ERROR(agent->init());
  return agent;
}

Status NodeAgent::init() {
  DMOE_RETURN_IF_ERROR(load_keys());
  DMOE_RETURN_IF_ERROR(check_node_ports(options_));
  DMOE_RETURN_IF_ERROR(build_runtime());
  DMOE_RETURN_IF_ERROR(start_expert_service());
  if (!options_.placement_file.empty()) DMOE_RETURN_IF_ERROR(apply_placement_file());
  if (options_.role == NodeRole::kFull) {
    HttpServerOptions http;
    http.address = options_.http;
    http.api_key = options_.api_key;
    http.max_queued = options_.max_queued;
    http.max_running = static_cast<size_t>(parts_->runner->max_sequences());
    DMOE_ASSIGN_OR_RETURN(parts_->http, HttpServer::start(http, *backend_));
  }
  if (!options_.scheduler.empty()) start_scheduler_link();
  if (!options_.ready_file.empty()) DMOE_RETURN_IF_ERROR(write_ready_file());
  spdlog::info("node '{}' serving: experts {} (advertised {}), {}, {} mode", options_.node_id,
               parts_->service->bound_endpoint(), parts_->advertise,
               parts_->http ? "HTTP " + parts_->http->bound_address()
                            : std::string("experts only (no HTTP)"),
               options_.scheduler.empty() ? "standalone" : "attached to " + options_.scheduler);
  return Status::ok();
}

// The node's key pair and the members it trusts (standalone: --peer-keys;
// attached: none until the scheduler sends them), and the ZAP handler that
// admits them to the expert service.
Status NodeAgent::load_keys() {
  NodeParts& p = *parts_;
  const NodeOptions& o = options_;
  if (o.insecure) {
    p.members = std::make_shared<MemberKeys>(std::nullopt);
    return Status::ok();
  }
  DMOE_ASSIGN_OR_RETURN(net::CurveKeyPair own,
                        net::read_secret_key_file(o.secret_key).with_context("--secret-key"));
  p.members = std::make_shared<MemberKeys>(own);
  if (!o.scheduler.empty()) {
    DMOE_ASSIGN_OR_RETURN(
        p.scheduler_key,
        net::read_public_key_file(o.scheduler_key).with_context("--scheduler-key"));
  }
  if (!o.peer_keys.empty()) {
    DMOE_ASSIGN_OR_RETURN(proto::Members members, members_from_directory(o.peer_keys));
    p.members->replace(members);
  }
  DMOE_ASSIGN_OR_RETURN(p.zap, net::ZapHandler::start(p.context, p.members->allowlist()));
  spdlog::info("CurveZMQ on: public key {}", own.public_key);
  return Status::ok();
}

// The model on this node's devices (common/assembly/model_runtime.h) with
// no experts yet -- the placement brings them -- and the distributed
// executor as its MoE executor; the tokenizer; how fast experts load from
// disk; the budget and headroom; the trace, migration executor and prompt
// runner.
Status NodeAgent::build_runtime() {
  NodeParts& p = *parts_;
  const NodeOptions& o = options_;
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::open(o.model_dir));
  const Checkpoint& ckpt = *checkpoint;  // owned by the runtime below
  const bool full = o.role == NodeRole::kFull;
  if (full && !ckpt.has_dense_weights()) {
    return failed_precondition(
        o.model_dir +
        " is a header-only copy (dancemoe model headers): it has no dense weights, which a node "
        "serving prompts needs -- give it a split checkpoint (dancemoe model split) or the whole "
        "model, or start it with --role experts to serve experts only");
  }
  if (ckpt.is_split()) {
    int64_t on_disk = 0, total = 0;
    for (int32_t l = 0; l < ckpt.config().n_layers; ++l) {
      if (!ckpt.config().layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int32_t e = 0; e < ckpt.config().n_experts; ++e, ++total) {
        on_disk += ckpt.has_expert_weights({l, e}) ? 1 : 0;
      }
    }
    spdlog::info(
        "{}: partial checkpoint, {} of {} experts on disk{}; the rest are fetched from "
        "peers as the placement needs them",
        o.model_dir, on_disk, total, ckpt.has_dense_weights() ? "" : ", no dense part");
  }
  if (ckpt.expert_digests() == nullptr) {
    spdlog::info(
        "{}: no {}; expert weights are loaded and fetched unverified "
        "(`dancemoe model manifest --model DIR` writes one; docs/security.md)",
        o.model_dir, ExpertManifest::kFileName);
  }
  const ModelConfig& config = ckpt.config();
  if (!full) {
    // experts only: no prompts, no tokenizer
  } else if (Result<std::unique_ptr<tokenizer::Tokenizer>> tok = ckpt.load_tokenizer();
             tok.is_ok()) {
    p.tokenizer = std::move(tok).value();
    std::string warning;
    p.chat_template = tokenizer::ChatTemplate::for_tokenizer_or_builtin(*p.tokenizer, &warning);
    if (!warning.empty()) spdlog::warn("{}: {}", o.model_dir, warning);
  } else if (tok.status().code() == StatusCode::kNotFound) {
    spdlog::warn("{}; prompts must be sent as prompt_tokens", tok.status().message());
  } else {
    return tok.status();
  }
  p.table = std::make_unique<HolderTableHandle>(HolderTable::empty(config));
  std::vector<std::string> device_names;
  for (const backend::DeviceName& d : o.devices.devices) device_names.push_back(d.text());
  p.log = std::make_unique<ActivationLog>(config, device_names, o.coactivation_pairs);
  PeerPoolOptions peer_options;
  peer_options.send_timeout =
      std::min<std::chrono::milliseconds>(o.call_timeout, std::chrono::milliseconds(200));
  peer_options.members = p.members;
  p.peers = std::make_unique<PeerPool>(p.context, peer_options);
  if (o.offload_cache_bytes > 0 && full) {
    // It fetches from peers what this node's disk lacks (weight gathering).
    FetcherOptions fetch;
    fetch.node_id = o.node_id;
    fetch.cluster_id = o.cluster_id;
    fetch.chunk_timeout =
        std::max<std::chrono::milliseconds>(o.call_timeout, std::chrono::seconds(2));
    fetch.members = p.members;
    p.offload = std::make_unique<OffloadCache>(ckpt, o.offload_cache_bytes,
                                               std::make_unique<ExpertFetcher>(p.context, fetch));
  }

  if (!o.replay_routing.empty()) {
    DMOE_ASSIGN_OR_RETURN(p.replay,
                          RoutingReplay::open(o.replay_routing, o.replay_origins, config));
    spdlog::warn("--replay-routing: expert choices come from {}, not from the router",
                 o.replay_routing);
  }

  DMOE_RETURN_IF_ERROR(check_shared_host(options_));
  RuntimeOptions runtime;
  static_cast<DeviceRequest&>(runtime) = node_device_request(o);  // as --doctor plans them
  runtime.expert_type = o.expert_type;
  runtime.interleave_k = o.interleave_weights;
  runtime.experts = std::vector<ExpertRef>{};
  runtime.reserve_gpu_expert_budget = true;  // the placement brings the experts later
  runtime.load_dense = full;
  runtime.make_executor = [this](ModelRuntime& rt) -> Result<std::unique_ptr<MoeExecutor>> {
    NodeParts& parts = *parts_;
    const NodeOptions& opts = options_;
    DistributedExecutorOptions exec;
    exec.node_id = opts.node_id;
    exec.cluster_id = opts.cluster_id;
    exec.wire_dtype = opts.wire_dtype;
    exec.call_timeout = opts.call_timeout;
    exec.max_attempts = opts.call_attempts;
    exec.overlap = opts.overlap;
    exec.max_call_tokens = opts.max_call_tokens;
    exec.weight_gathering = opts.weight_gathering;
    auto executor = std::make_unique<DistributedMoeExecutor>(
        rt.config(), rt.experts(), rt.expert_computer(), *parts.table, *parts.peers,
        parts.offload.get(), *parts.log, exec);
    executor->set_routing_replay(parts.replay.get());
    parts.executor = executor.get();
    return std::unique_ptr<MoeExecutor>(std::move(executor));
  };
  const auto start = std::chrono::steady_clock::now();
  DMOE_ASSIGN_OR_RETURN(p.runtime, ModelRuntime::open(std::move(checkpoint), runtime));
  spdlog::info("model: dense weights {:.1f} MB in {:.2f} s; {}",
               p.runtime->has_dense() ? p.runtime->dense().n_bytes() / 1e6 : 0.0,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
               p.runtime->description());
  p.load_bytes_per_s = measure_load_bandwidth(p.checkpoint());
  p.expert_budget = 0;
  for (const RuntimeDevice& d : p.runtime->devices()) p.expert_budget += d.expert_budget_bytes;
  p.migration_headroom =
      o.migration_headroom_bytes > 0 ? o.migration_headroom_bytes : p.expert_budget / 2;
  if (!o.record_trace.empty()) {
    DMOE_ASSIGN_OR_RETURN(p.trace, TraceWriter::open(o.record_trace, config, o.node_id));
  }

  MigrationOptions migration;
  migration.node_id = o.node_id;
  migration.cluster_id = o.cluster_id;
  migration.devices.clear();
  for (const RuntimeDevice& d : p.runtime->devices()) migration.devices.push_back(d.name);
  migration.source = o.expert_source;
  migration.throttle = o.throttle;
  migration.memory_limit_bytes = p.expert_budget + p.migration_headroom;
  migration.members = p.members;
  p.migration = std::make_unique<MigrationExecutor>(
      p.checkpoint(), p.store(), *p.table, *p.log, p.context, migration,
      [this] { return parts_->runner && parts_->runner->in_flight() > 0; });

  if (!full) return Status::ok();  // no prompts: no runner
  PromptRunner::Parts runner;
  runner.transformer = &p.runtime->transformer();
  runner.tokenizer = p.tokenizer.get();
  runner.log = p.log.get();
  runner.trace = p.trace.get();
  runner.replay = p.replay.get();
  runner.throttle = &p.migration->throttle();
  runner.migration_loading = [this] { return parts_->migration->loading(); };
  runner.context_tokens = o.context_tokens;
  runner.batch.max_sequences = o.max_batch;
  runner.batch.prefill_chunk_tokens = o.prefill_chunk;
  runner.batch.stream_interval = o.stream_interval;
  runner.batch.prefix_cache_bytes = static_cast<int64_t>(o.prefix_cache_bytes);
  {
    const int64_t position_bytes = runner.transformer->cache_bytes_per_position();
    const int64_t block_bytes = position_bytes * runner.batch.block_tokens;
    const int64_t context_blocks =
        (o.context_tokens + runner.batch.block_tokens - 1) / runner.batch.block_tokens;
    runner.batch.kv_budget_blocks = o.kv_memory_bytes > 0
                                        ? static_cast<int64_t>(o.kv_memory_bytes) / block_bytes
                                        : 4 * context_blocks;
    if (runner.batch.kv_budget_blocks < 1) {
      return invalid_argument("--kv-memory: less than one KV block (" +
                              std::to_string(block_bytes) + " bytes)");
    }
  }
  // A backend that cannot batch sequences runs them one after another; its
  // caches live on the device, where the prefix cache cannot copy them.
  if (!runner.transformer->batches_sequences()) {
    runner.batch.max_sequences = 1;
    runner.batch.prefix_cache_bytes = 0;
  }
  DMOE_ASSIGN_OR_RETURN(p.runner, PromptRunner::create(runner));
  spdlog::info(
      "generation: up to {} sequences per step, KV budget {} blocks of {} tokens, "
      "prefix cache {} MiB",
      p.runner->max_sequences(), runner.batch.kv_budget_blocks, runner.batch.block_tokens,
      o.prefix_cache_bytes >> 20);
  return Status::ok();
}

// The ports this node will bind, checked before the weights are loaded
// (minutes for a large model) rather than after.
Status NodeAgent::start_expert_service() {
  NodeParts& p = *parts_;
  const NodeOptions& o = options_;
  ExpertServiceOptions service;
  service.bind_endpoint = o.experts_bind;
  service.n_workers = o.service_workers;
  service.make_computer = [this] {
    return parts_->runtime->new_expert_computer(options_.service_threads);
  };
  service.precision = o.precision;
  service.limits.max_call_tokens = o.max_call_tokens;
  service.identity = {o.node_id, o.cluster_id};
  service.members = p.members;
  DMOE_ASSIGN_OR_RETURN(
      p.service, ExpertService::start(p.context, p.checkpoint().config(), p.store(), service));
  p.advertise = advertised_endpoint(o.advertise, p.service->bound_endpoint());
  return Status::ok();
}

// Standalone mode: the placement file, checked against the model and this
// node's budget, loaded before the node serves.
Status NodeAgent::apply_placement_file() {
  NodeParts& p = *parts_;
  const NodeOptions& o = options_;
  DMOE_ASSIGN_OR_RETURN(ClusterPlacement placement, read_placement_file(o.placement_file));
  DMOE_RETURN_IF_ERROR(check_against_model(placement, p.checkpoint().config(), o.placement_file));
  const NodePlacement* mine = placement.find(o.node_id);
  if (mine == nullptr) {
    spdlog::warn("{}: node '{}' is not in the placement; it holds no experts", o.placement_file,
                 o.node_id);
  } else {
    uint64_t bytes = 0;
    for (ExpertRef k : mine->experts()) bytes += p.store().expert_bytes(k);
    if (bytes > p.expert_budget) {
      Status over =
          resource_exhausted(o.placement_file + ": node '" + o.node_id + "' is given " +
                             std::to_string(bytes) + " expert bytes, over its budget of " +
                             std::to_string(p.expert_budget) + " (--expert-memory)");
      if (o.expert_memory_bytes > 0) return over;
      spdlog::warn("{}", over.message());
    }
  }
  const auto load_start = std::chrono::steady_clock::now();
  DMOE_RETURN_IF_ERROR(p.migration->apply_now(placement));
  spdlog::info(
      "placement v{} from {}: {} experts loaded ({:.1f} MB) in {:.2f} s", placement.version,
      o.placement_file, p.store().n_resident(), p.store().resident_bytes() / 1e6,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  return Status::ok();
}

// What this node tells the scheduler when it (re-)registers.
proto::Register NodeAgent::registration() const {
  const NodeParts& p = *parts_;
  proto::Register r;
  r.node_id = options_.node_id;
  r.model_id = p.checkpoint().model_id();
  // Every device with its budget; experts reach any of them from disk at the
  // measured disk-to-host rate (a GPU's host-to-device copy is not the
  // bottleneck of a load from disk).
  for (const RuntimeDevice& d : p.runtime->devices()) {
    r.devices.push_back({d.name, d.expert_budget_bytes, p.load_bytes_per_s,
                         std::string(backend::device_kind_name(d.kind))});
  }
  r.host_memory_bytes = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                        static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  r.expert_endpoint = p.advertise;
  r.http_endpoint = p.http ? "http://" + p.http->bound_address() : std::string();
  r.role = options_.role == NodeRole::kExperts ? "experts" : "";
  // Partial checkpoints: the experts whose weights this node can serve from
  // its disk (the scheduler places by them; docs/partial-checkpoints.md).
  const Checkpoint& ckpt = p.checkpoint();
  if (ckpt.is_split()) {
    r.expert_files_partial = true;
    const ModelConfig& c = ckpt.config();
    for (int32_t l = 0; l < c.n_layers; ++l) {
      if (!c.layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int32_t e = 0; e < c.n_experts; ++e) {
        if (ckpt.has_expert_weights({l, e})) r.expert_files.push_back({l, e});
      }
    }
  }
  r.resident = p.store().resident_keys();
  for (int32_t d : p.store().resident_devices())
    r.resident_devices.push_back(static_cast<uint16_t>(d));
  r.placement_version = p.migration->committed_version();
  r.migration_headroom_bytes = p.migration_headroom;
  // The precision of the experts and their sizes as held, which the
  // scheduler packs with (quantized experts take less room).
  r.expert_type = std::string(kernels::weight_type_name(p.store().held_type()));
  const ModelConfig& config = p.checkpoint().config();
  for (int32_t l = 0; l < config.n_layers; ++l) {
    if (config.layer_is_moe[static_cast<size_t>(l)]) {
      r.expert_layer_bytes.push_back(p.store().expert_bytes({l, 0}));
    }
  }
  return r;
}

void NodeAgent::start_scheduler_link() {
  NodeParts& p = *parts_;
  const NodeOptions& o = options_;
  SchedulerLinkOptions link;
  link.endpoint = o.scheduler;
  link.node_id = o.node_id;
  link.cluster_id = o.cluster_id;
  link.report_interval = o.report_interval;
  link.report_interval_from_flag = o.report_interval_set;
  link.report_buffer = o.report_buffer;
  link.members = p.members;
  link.scheduler_key = p.scheduler_key;
  p.link = std::make_unique<SchedulerLink>(
      p.context, link, [this] { return registration(); }, *p.migration, *p.log,
      [this] { return parts_->runner ? parts_->runner->in_flight() : 0; });
  p.link->start();
}

// The ready file says "endpoints bound" to whoever started the node.
Status NodeAgent::write_ready_file() const {
  const NodeParts& p = *parts_;
  const NodeOptions& o = options_;
  json ready = {{"node_id", o.node_id},
                {"expert_endpoint", p.service->bound_endpoint()},
                {"advertise", p.advertise},
                {"http", p.http ? p.http->bound_address() : std::string()},
                {"pid", static_cast<int64_t>(::getpid())},
                {"mode", o.scheduler.empty() ? "standalone" : "attached"},
                {"placement_version", p.migration->committed_version()}};
  return write_json_atomically(o.ready_file, ready);
}

Status NodeAgent::reload_placement() {
  if (options_.placement_file.empty()) {
    return failed_precondition("no --placement file to reload (attached to a scheduler)");
  }
  NodeParts& p = *parts_;
  DMOE_ASSIGN_OR_RETURN(ClusterPlacement placement, read_placement_file(options_.placement_file));
  const uint64_t committed = p.migration->committed_version();
  if (placement.version <= committed) {
    return invalid_argument(options_.placement_file + ": version " +
                            std::to_string(placement.version) +
                            " must be greater than the committed v" + std::to_string(committed));
  }
  spdlog::info("{}: migrating to placement v{}", options_.placement_file, placement.version);
  // Commit from the main loop (poll), never from the loader thread.
  return p.migration->prepare(placement, [this](uint64_t version, const Status& status) {
    if (!status.is_ok()) {
      spdlog::error("placement v{} not applied: {}", version, status.to_string());
      return;
    }
    std::lock_guard<std::mutex> lock(parts_->reload_mutex);
    parts_->reload_ready = version;
  });
}

void NodeAgent::poll() {
  const int64_t now_ms = system_clock().steady_ms();
  if (options_.insecure && now_ms >= next_insecure_warning_ms_) {
    next_insecure_warning_ms_ = now_ms + 60'000;
    spdlog::warn(
        "INSECURE: --insecure is set -- no CurveZMQ, no keys: anyone who reaches {} may call "
        "this node's experts, download its weights and answer as its peers (docs/security.md)",
        parts_->service ? parts_->service->bound_endpoint() : options_.experts_bind);
  }
  std::optional<uint64_t> ready;
  {
    std::lock_guard<std::mutex> lock(parts_->reload_mutex);
    ready.swap(parts_->reload_ready);
  }
  if (ready) {
    Status s = parts_->migration->commit(*ready);
    if (!s.is_ok()) spdlog::error("placement v{}: {}", *ready, s.to_string());
  }
}

bool NodeAgent::refused() const { return parts_->link && parts_->link->refused(); }

const std::string& NodeAgent::expert_endpoint() const { return parts_->service->bound_endpoint(); }
const std::string& NodeAgent::http_address() const {
  static const std::string none;
  return parts_->http ? parts_->http->bound_address() : none;
}

}  // namespace dancemoe::node
