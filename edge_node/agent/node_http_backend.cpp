#include "edge_node/agent/node_http_backend.h"

#include <chrono>
#include <filesystem>

#include "edge_node/agent/node_metrics.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

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

std::pair<bool, std::string> NodeHttpBackend::health() {
  NodeParts& p = parts_;
  if (!p.link) return {true, ""};
  const LinkStatus link = p.link->status();
  if (link.refused) return {false, "refused by the scheduler: " + link.reason};
  if (p.migration->committed_version() == 0) {
    return {false, link.attached ? "attached; no placement committed yet"
                                 : "not attached to the scheduler at " + options_.scheduler +
                                       " and no placement committed yet" +
                                       (link.reason.empty() ? "" : " (" + link.reason + ")")};
  }
  // The node keeps answering prompts on its committed placement while the
  // scheduler is away, but it is not healthy: it cannot report, migrate or
  // be repaired until it re-attaches (the contract for /health).
  if (!link.attached) {
    return {false, "not attached to the scheduler at " + options_.scheduler + " (reconnecting" +
                       (link.reason.empty() ? "" : ": " + link.reason) +
                       "); still answering prompts on placement v" +
                       std::to_string(p.migration->committed_version())};
  }
  return {true, ""};
}

json NodeHttpBackend::stats() {
  NodeParts& p = parts_;
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
  json devices = json::array();
  const std::vector<uint64_t> held_bytes = p.store().resident_bytes_by_device();
  const std::vector<int64_t> held = p.store().n_resident_by_device();
  const std::vector<ActivationSnapshot::Device> computed = a.devices;
  for (size_t d = 0; d < p.runtime->devices().size(); ++d) {
    const RuntimeDevice& dev = p.runtime->devices()[d];
    json one = {{"name", dev.name},   {"kind", backend::device_kind_name(dev.kind)},
                {"label", dev.label}, {"budget_bytes", dev.expert_budget_bytes},
                {"experts", held[d]}, {"bytes_used", held_bytes[d]}};
    if (d < computed.size()) {
      one["compute"] = {{"pairs", computed[d].pairs},
                        {"busy_us", computed[d].busy_us},
                        {"us_per_pair", computed[d].us_per_pair()}};
    }
    devices.push_back(std::move(one));
  }
  json out = {{"node_id", options_.node_id},
              {"mode", options_.scheduler.empty() ? "standalone" : "attached"},
              {"model_id", p.checkpoint().model_id()},
              {"placement_version", table->version()},
              {"experts",
               {{"local", table->local_experts().size()},
                {"resident", p.store().n_resident()},
                {"resident_bytes", p.store().resident_bytes()},
                {"budget_bytes", p.expert_budget},
                {"load_bytes_per_s", p.load_bytes_per_s}}},
              {"devices", devices},
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
                {"bad_messages", sc.bad_messages.load()},
                {"refused", sc.refused.load()}}},
              {"migration",
               {{"state", m.state},
                {"committed_version", m.committed_version},
                {"target_version", m.target_version},
                {"bytes_total", m.bytes_total},
                {"bytes_done", m.bytes_done},
                {"experts_loaded", m.experts_loaded},
                {"experts_fetched", m.experts_fetched},
                {"experts_evicted", m.experts_evicted},
                {"experts_stored", m.experts_stored},
                {"store_failures", m.store_failures},
                {"last_error", m.last_error},
                {"last_store_error", m.last_store_error},
                {"throttle_duty", p.migration->throttle().duty()}}},
              {"requests_in_flight", p.runner->in_flight()}};
  if (p.offload) {
    out["offload"] = {{"capacity_bytes", p.offload->capacity_bytes()},
                      {"resident_bytes", p.offload->resident_bytes()},
                      {"hits", p.offload->hits()},
                      {"loads", p.offload->loads()},
                      {"fetches", p.offload->fetches()},
                      {"fetched_bytes", p.offload->fetched_bytes()}};
  }
  if (p.executor) {
    const GatheringCounters& g = p.executor->gathering();
    out["weight_gathering"] = {{"enabled", p.executor->options().weight_gathering},
                               {"experts_fetched", g.experts_fetched.load()},
                               {"experts_cached", g.experts_cached.load()},
                               {"weight_bytes", g.weight_bytes.load()},
                               {"activation_bytes_avoided", g.activation_bytes_avoided.load()},
                               {"fetch_ms", g.fetch_us.load() / 1000},
                               {"fetch_failures", g.fetch_failures.load()}};
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

Result<GenerateResponse> NodeHttpBackend::generate(const GenerateRequest& request) {
  return parts_.runner->generate(request);
}

ServedModel NodeHttpBackend::served_model() {
  const NodeParts& p = parts_;
  ServedModel m;
  std::filesystem::path dir = std::filesystem::path(options_.model_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "models/small/"
  const std::string dir_name = dir.filename().string();
  const std::vector<std::string>& served = options_.served_model_names;
  m.name = served.empty() ? dir_name : served.front();
  for (size_t i = 1; i < served.size(); ++i) m.aliases.push_back(served[i]);
  if (dir_name != m.name) m.aliases.push_back(dir_name);
  m.model_id = p.checkpoint().model_id();
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(dir / "config.json", ec);
  if (!ec) {
    m.created_unix = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::file_clock::to_sys(written).time_since_epoch())
                         .count();
  }
  m.context_tokens = options_.context_tokens;
  m.vocab_size = p.runtime->transformer().config().vocab_size;
  m.has_tokenizer = p.tokenizer != nullptr;
  m.chat_template = p.chat_template;
  // A model that thinks aloud has the markers as tokens of its own (Qwen3).
  const ReasoningMarkers markers;
  if (p.tokenizer && m.chat_template && p.tokenizer->token_id(markers.open) &&
      p.tokenizer->token_id(markers.close)) {
    m.reasoning = markers;
  }
  return m;
}

Result<std::vector<int32_t>> NodeHttpBackend::tokenize(const std::string& text,
                                                       bool add_special_tokens) {
  if (!parts_.tokenizer) return invalid_argument("this model has no tokenizer.json");
  return parts_.tokenizer->encode(text, add_special_tokens);
}

Result<std::string> NodeHttpBackend::detokenize(std::span<const int32_t> ids, bool skip_special) {
  if (!parts_.tokenizer) return invalid_argument("this model has no tokenizer.json");
  return parts_.tokenizer->decode(ids, skip_special);
}

std::string NodeHttpBackend::token_bytes(int32_t id) {
  if (!parts_.tokenizer) return {};
  return parts_.tokenizer->token_bytes(id).value_or(std::string());
}

void NodeHttpBackend::write_metrics(http::PrometheusWriter& out) {
  NodeParts& p = parts_;
  NodeMetricsInputs in;
  in.activations = p.log->snapshot();
  const std::shared_ptr<const HolderTable> table = p.table->get();
  in.placement_version = table->version();
  in.experts_local = table->local_experts().size();
  in.experts_resident = p.store().n_resident();
  in.experts_resident_bytes = p.store().resident_bytes();
  in.expert_budget_bytes = p.expert_budget;
  in.migration = p.migration->status();
  const ServiceCounters& sc = p.service->counters();
  in.service = {sc.calls.load(),  sc.call_tokens.load(),  sc.chunks.load(),
                sc.errors.load(), sc.bad_messages.load(), sc.refused.load()};
  if (p.offload) {
    in.offload =
        NodeMetricsInputs::Offload{p.offload->hits(), p.offload->loads(),
                                   p.offload->resident_bytes(), p.offload->capacity_bytes()};
  }
  if (p.executor) {
    const GatheringCounters& g = p.executor->gathering();
    in.gathering = NodeMetricsInputs::Gathering{
        g.experts_fetched.load(),          g.experts_cached.load(), g.weight_bytes.load(),
        g.activation_bytes_avoided.load(), g.fetch_us.load(),       g.fetch_failures.load()};
  }
  if (p.link) {
    const LinkStatus l = p.link->status();
    in.scheduler = NodeMetricsInputs::Scheduler{l.attached, l.reports_sent, l.reports_acked,
                                                l.reports_dropped};
  }
  if (p.runner) in.batch = p.runner->batch_stats();
  write_node_metrics(out, in);
}

}  // namespace dancemoe::node
