#include "edge_node/agent/node_agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <mutex>
#include <optional>

#include "common/model/checkpoint.h"
#include "common/model/dense_weights.h"
#include "common/model/expert_compute.h"
#include "common/model/expert_store.h"
#include "common/model/local_model.h"
#include "common/model/transformer.h"
#include "common/placement/placement_json.h"
#include "common/runtime/thread_pool.h"
#include "common/tokenizer/tokenizer.h"
#include "edge_node/activation/activation_log.h"
#include "edge_node/agent/engine.h"
#include "edge_node/agent/node_metrics.h"
#include "edge_node/agent/node_resources.h"
#include "edge_node/agent/scheduler_link.h"
#include "edge_node/expert_service/expert_service.h"
#include "edge_node/holders/holder_table.h"
#include "edge_node/migration/migration_executor.h"
#include "edge_node/moe/distributed_executor.h"
#include "edge_node/remote/offload_cache.h"
#include "edge_node/remote/peer_pool.h"
#include "edge_node/trace/trace_writer.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

// Scratch the forward pass needs beside weights and KV cache.
constexpr uint64_t kWorkspaceBytes = 256ull << 20;

std::string advertised_endpoint(const std::string& flag, const std::string& bound) {
  if (!flag.empty()) return flag;
  const std::string any = "0.0.0.0";
  const size_t at = bound.find(any);
  if (at == std::string::npos) return bound;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return bound;
  return bound.substr(0, at) + host + bound.substr(at + any.size());
}

json served_json(const ServedCounts& c) {
  return {
      {"activations", c.activations},
      {"local", c.local},
      {"remote", c.remote},
      {"offloaded", c.offloaded},
      {"remote_calls", c.remote_calls},
      {"remote_failures", c.remote_failures},
      {"tokens", c.tokens},
      {"requests", c.requests},
      {"local_hit_ratio",
       c.activations ? static_cast<double>(c.local) / static_cast<double>(c.activations) : 0.0}};
}

}  // namespace

struct NodeAgent::Parts {
  zmq::context_t context{1};
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::optional<DenseWeights> dense;
  std::unique_ptr<ExpertStore> store;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<ExpertComputer> computer;
  std::unique_ptr<HolderTableHandle> table;
  std::unique_ptr<ActivationLog> log;
  std::unique_ptr<PeerPool> peers;
  std::unique_ptr<OffloadCache> offload;
  std::unique_ptr<DistributedMoeExecutor> executor;
  std::unique_ptr<Transformer> transformer;
  std::unique_ptr<TraceWriter> trace;
  std::unique_ptr<MigrationExecutor> migration;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<ExpertService> service;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<SchedulerLink> link;

  std::string advertise;
  uint64_t expert_budget = 0;
  double load_bytes_per_s = 0;

  std::mutex reload_mutex;
  std::optional<uint64_t> reload_ready;  // standalone reload loaded, to commit
};

NodeAgent::NodeAgent(const NodeOptions& options)
    : options_(options), parts_(std::make_unique<Parts>()) {}

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
  Parts& p = *parts_;
  const NodeOptions& o = options_;
  DMOE_ASSIGN_OR_RETURN(p.checkpoint, Checkpoint::open(o.model_dir));
  const ModelConfig& config = p.checkpoint->config();
  if (std::optional<std::filesystem::path> tok = p.checkpoint->tokenizer_path()) {
    DMOE_ASSIGN_OR_RETURN(p.tokenizer, tokenizer::Tokenizer::load(*tok));
  } else {
    spdlog::warn("{}: no tokenizer.json; prompts must be sent as prompt_tokens", o.model_dir);
  }
  const auto dense_start = std::chrono::steady_clock::now();
  DMOE_ASSIGN_OR_RETURN(DenseWeights dense, DenseWeights::load(*p.checkpoint));
  p.dense.emplace(std::move(dense));
  spdlog::info(
      "dense weights: {:.1f} MB in {:.2f} s", p.dense->n_bytes() / 1e6,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - dense_start).count());
  p.load_bytes_per_s = measure_load_bandwidth(*p.checkpoint);

  const uint64_t kv_bytes = static_cast<uint64_t>(o.context_tokens) *
                            static_cast<uint64_t>(config.n_layers * config.kv_dim()) * 2 * 4;
  if (o.expert_memory_bytes > 0) {
    p.expert_budget = o.expert_memory_bytes;
  } else {
    const uint64_t available = available_memory_bytes();
    const uint64_t reserved = kv_bytes + kWorkspaceBytes + o.offload_cache_bytes;
    p.expert_budget = available > reserved ? available - reserved : 0;
  }
  const uint64_t headroom =
      o.migration_headroom_bytes > 0 ? o.migration_headroom_bytes : p.expert_budget / 2;

  p.store = std::make_unique<ExpertStore>(*p.checkpoint);
  const int n_threads = o.threads > 0 ? o.threads : default_thread_count();
  p.pool = std::make_unique<ThreadPool>(n_threads);
  p.computer = std::make_unique<ExpertComputer>(*p.pool, o.precision);
  p.table = std::make_unique<HolderTableHandle>(HolderTable::empty(config));
  p.log = std::make_unique<ActivationLog>(config);
  PeerPoolOptions peer_options;
  peer_options.send_timeout =
      std::min<std::chrono::milliseconds>(o.call_timeout, std::chrono::milliseconds(200));
  p.peers = std::make_unique<PeerPool>(p.context, peer_options);
  if (o.offload_cache_bytes > 0) {
    p.offload = std::make_unique<OffloadCache>(*p.checkpoint, o.offload_cache_bytes);
  }
  DistributedExecutorOptions exec;
  exec.node_id = o.node_id;
  exec.cluster_id = o.cluster_id;
  exec.wire_dtype = o.wire_dtype;
  exec.call_timeout = o.call_timeout;
  exec.max_attempts = o.call_attempts;
  exec.overlap = o.overlap;
  exec.max_call_tokens = o.max_call_tokens;
  p.executor = std::make_unique<DistributedMoeExecutor>(config, *p.store, *p.computer, *p.table,
                                                        *p.peers, p.offload.get(), *p.log, exec);
  p.transformer =
      std::make_unique<Transformer>(config, *p.dense, *p.executor, *p.computer, *p.pool);
  if (!o.record_trace.empty()) {
    DMOE_ASSIGN_OR_RETURN(p.trace, TraceWriter::open(o.record_trace, config, o.node_id));
  }

  MigrationOptions migration;
  migration.node_id = o.node_id;
  migration.cluster_id = o.cluster_id;
  migration.source = o.expert_source;
  migration.throttle = o.throttle;
  migration.memory_limit_bytes = p.expert_budget + headroom;
  p.migration = std::make_unique<MigrationExecutor>(
      *p.checkpoint, *p.store, *p.table, *p.log, p.context, migration,
      [this] { return parts_->engine && parts_->engine->in_flight() > 0; });

  Engine::Parts engine;
  engine.transformer = p.transformer.get();
  engine.tokenizer = p.tokenizer.get();
  engine.log = p.log.get();
  engine.trace = p.trace.get();
  engine.throttle = &p.migration->throttle();
  engine.migration_loading = [this] { return parts_->migration->loading(); };
  engine.context_tokens = o.context_tokens;
  DMOE_ASSIGN_OR_RETURN(p.engine, Engine::create(engine));

  ExpertServiceOptions service;
  service.bind_endpoint = o.experts_bind;
  service.n_workers = o.service_workers;
  service.threads_per_worker = o.service_threads > 0 ? o.service_threads : n_threads;
  service.precision = o.precision;
  service.limits.max_call_tokens = o.max_call_tokens;
  service.identity = {o.node_id, o.cluster_id};
  DMOE_ASSIGN_OR_RETURN(p.service, ExpertService::start(p.context, config, *p.store, service));
  p.advertise = advertised_endpoint(o.advertise, p.service->bound_endpoint());

  if (!o.placement_file.empty()) {
    DMOE_ASSIGN_OR_RETURN(ClusterPlacement placement, read_placement_file(o.placement_file));
    DMOE_RETURN_IF_ERROR(check_against_model(placement, config, o.placement_file));
    const NodePlacement* mine = placement.find(o.node_id);
    if (mine == nullptr) {
      spdlog::warn("{}: node '{}' is not in the placement; it holds no experts", o.placement_file,
                   o.node_id);
    } else {
      uint64_t bytes = 0;
      for (ExpertRef k : mine->experts()) bytes += p.store->expert_bytes(k);
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
        o.placement_file, p.store->n_resident(), p.store->resident_bytes() / 1e6,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  }

  HttpServerOptions http;
  http.address = o.http;
  http.api_key = o.api_key;
  http.max_queued = o.max_queued;
  DMOE_ASSIGN_OR_RETURN(p.http, HttpServer::start(http, *this));

  if (!o.scheduler.empty()) {
    SchedulerLinkOptions link;
    link.endpoint = o.scheduler;
    link.node_id = o.node_id;
    link.cluster_id = o.cluster_id;
    link.report_interval = o.report_interval;
    link.report_interval_from_flag = o.report_interval_set;
    link.report_buffer = o.report_buffer;
    p.link = std::make_unique<SchedulerLink>(
        p.context, link,
        [this] {
          Parts& q = *parts_;
          proto::Register r;
          r.node_id = options_.node_id;
          r.model_id = q.checkpoint->model_id();
          r.devices.push_back({"cpu0", q.expert_budget, q.load_bytes_per_s});
          r.host_memory_bytes = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                                static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
          r.expert_endpoint = q.advertise;
          r.http_endpoint = "http://" + q.http->bound_address();
          for (ExpertRef k : q.store->resident_keys()) {
            r.resident.push_back({static_cast<uint16_t>(k.layer), static_cast<uint16_t>(k.expert)});
            r.resident_devices.push_back(0);
          }
          r.placement_version = q.migration->committed_version();
          return r;
        },
        *p.migration, *p.log, [this] { return parts_->engine->in_flight(); });
    p.link->start();
  }

  if (!o.ready_file.empty()) {
    json ready = {{"node_id", o.node_id},
                  {"expert_endpoint", p.service->bound_endpoint()},
                  {"advertise", p.advertise},
                  {"http", p.http->bound_address()},
                  {"pid", static_cast<int64_t>(::getpid())},
                  {"mode", o.scheduler.empty() ? "standalone" : "attached"},
                  {"placement_version", p.migration->committed_version()}};
    DMOE_RETURN_IF_ERROR(write_json_atomically(o.ready_file, ready));
  }
  spdlog::info("node '{}' serving: experts {} (advertised {}), HTTP {}, {} mode", o.node_id,
               p.service->bound_endpoint(), p.advertise, p.http->bound_address(),
               o.scheduler.empty() ? "standalone" : "attached to " + o.scheduler);
  return Status::ok();
}

Status NodeAgent::reload_placement() {
  if (options_.placement_file.empty()) {
    return failed_precondition("no --placement file to reload (attached to a scheduler)");
  }
  Parts& p = *parts_;
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
const std::string& NodeAgent::http_address() const { return parts_->http->bound_address(); }

std::pair<bool, std::string> NodeAgent::health() {
  Parts& p = *parts_;
  if (!p.link) return {true, ""};
  const LinkStatus link = p.link->status();
  if (link.refused) return {false, "refused by the scheduler: " + link.reason};
  if (p.migration->committed_version() == 0) {
    return {false, link.attached ? "attached; no placement committed yet"
                                 : "not attached to the scheduler at " + options_.scheduler +
                                       " and no placement committed yet"};
  }
  // The node keeps answering prompts on its committed placement while the
  // scheduler is away, but it is not healthy: it cannot report, migrate or
  // be repaired until it re-attaches (the contract for /health).
  if (!link.attached) {
    return {false, "not attached to the scheduler at " + options_.scheduler +
                       " (reconnecting); still answering prompts on placement v" +
                       std::to_string(p.migration->committed_version())};
  }
  return {true, ""};
}

json NodeAgent::stats() {
  Parts& p = *parts_;
  const ActivationSnapshot a = p.log->snapshot();
  const std::shared_ptr<const HolderTable> table = p.table->get();
  json peers = json::array();
  for (const ActivationSnapshot::Peer& peer : a.peers) {
    peers.push_back({{"node_id", peer.node_id},
                     {"calls", peer.calls},
                     {"failures", peer.failures},
                     {"bytes", peer.bytes},
                     {"mean_latency_us", peer.mean_latency_us},
                     {"p99_latency_us", peer.p99_latency_us}});
  }
  const ServiceCounters& sc = p.service->counters();
  const MigrationStatus m = p.migration->status();
  json out = {{"node_id", options_.node_id},
              {"mode", options_.scheduler.empty() ? "standalone" : "attached"},
              {"model_id", p.checkpoint->model_id()},
              {"placement_version", table->version()},
              {"experts",
               {{"local", table->local_experts().size()},
                {"resident", p.store->n_resident()},
                {"resident_bytes", p.store->resident_bytes()},
                {"budget_bytes", p.expert_budget},
                {"load_bytes_per_s", p.load_bytes_per_s}}},
              {"activations",
               {{"total", served_json(a.total)}, {"since_version", served_json(a.since_version)}}},
              {"counts_since_version", a.counts_since_version},
              {"local_calls",
               {{"calls", a.local_calls},
                {"mean_latency_us", a.local_mean_latency_us},
                {"p99_latency_us", a.local_p99_latency_us}}},
              {"peers", peers},
              {"service",
               {{"calls", sc.calls.load()},
                {"call_tokens", sc.call_tokens.load()},
                {"chunks", sc.chunks.load()},
                {"errors", sc.errors.load()},
                {"bad_messages", sc.bad_messages.load()}}},
              {"migration",
               {{"state", m.state},
                {"committed_version", m.committed_version},
                {"target_version", m.target_version},
                {"bytes_total", m.bytes_total},
                {"bytes_done", m.bytes_done},
                {"experts_loaded", m.experts_loaded},
                {"experts_fetched", m.experts_fetched},
                {"experts_evicted", m.experts_evicted},
                {"last_error", m.last_error},
                {"throttle_duty", p.migration->throttle().duty()}}},
              {"requests_in_flight", p.engine->in_flight()}};
  if (p.offload) {
    out["offload"] = {{"capacity_bytes", p.offload->capacity_bytes()},
                      {"resident_bytes", p.offload->resident_bytes()},
                      {"hits", p.offload->hits()},
                      {"loads", p.offload->loads()}};
  }
  if (p.link) {
    const LinkStatus l = p.link->status();
    out["scheduler"] = {{"endpoint", options_.scheduler},
                        {"attached", l.attached},
                        {"refused", l.refused},
                        {"reason", l.reason},
                        {"registrations", l.registrations},
                        {"reports_sent", l.reports_sent},
                        {"reports_acked", l.reports_acked},
                        {"reports_pending", l.reports_pending},
                        {"reports_dropped", l.reports_dropped},
                        {"reports_refused", l.reports_refused}};
  }
  return out;
}

Result<GenerateResponse> NodeAgent::generate(const GenerateRequest& request) {
  return parts_->engine->generate(request);
}

ServedModel NodeAgent::served_model() {
  const Parts& p = *parts_;
  ServedModel m;
  std::filesystem::path dir = std::filesystem::path(options_.model_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "models/small/"
  m.name = dir.filename().string();
  m.model_id = p.checkpoint->model_id();
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(dir / "config.json", ec);
  if (!ec) {
    m.created_unix = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::file_clock::to_sys(written).time_since_epoch())
                         .count();
  }
  m.context_tokens = options_.context_tokens;
  m.has_tokenizer = p.tokenizer != nullptr;
  if (p.tokenizer) m.chat_format = p.tokenizer->chat_format();
  return m;
}

Result<std::vector<int32_t>> NodeAgent::tokenize(const std::string& text, bool add_special_tokens) {
  if (!parts_->tokenizer) return invalid_argument("this model has no tokenizer.json");
  return parts_->tokenizer->encode(text, add_special_tokens);
}

void NodeAgent::write_metrics(PrometheusWriter& out) {
  Parts& p = *parts_;
  NodeMetricsInputs in;
  in.activations = p.log->snapshot();
  const std::shared_ptr<const HolderTable> table = p.table->get();
  in.placement_version = table->version();
  in.experts_local = table->local_experts().size();
  in.experts_resident = p.store->n_resident();
  in.experts_resident_bytes = p.store->resident_bytes();
  in.expert_budget_bytes = p.expert_budget;
  in.migration = p.migration->status();
  const ServiceCounters& sc = p.service->counters();
  in.service = {sc.calls.load(), sc.call_tokens.load(), sc.chunks.load(), sc.errors.load(),
                sc.bad_messages.load()};
  if (p.offload) {
    in.offload =
        NodeMetricsInputs::Offload{p.offload->hits(), p.offload->loads(),
                                   p.offload->resident_bytes(), p.offload->capacity_bytes()};
  }
  if (p.link) {
    const LinkStatus l = p.link->status();
    in.scheduler = NodeMetricsInputs::Scheduler{l.attached, l.reports_sent, l.reports_acked,
                                                l.reports_dropped};
  }
  write_node_metrics(out, in);
}

}  // namespace dancemoe::node
