#include "edge_node/activation/activation_log.h"

#include <algorithm>
#include <chrono>

namespace dancemoe::node {

uint64_t unix_now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

namespace {

std::vector<int32_t> experts_per_layer(const ModelConfig& config) {
  std::vector<int32_t> out;
  for (int64_t l = 0; l < config.n_layers; ++l) {
    out.push_back(
        config.layer_is_moe[static_cast<size_t>(l)] ? static_cast<int32_t>(config.n_experts) : 0);
  }
  return out;
}

}  // namespace

ActivationLog::ActivationLog(const ModelConfig& config, std::vector<std::string> devices,
                             int32_t pairs_per_layer)
    : n_layers_(config.n_layers),
      n_experts_(config.n_experts),
      pairs_per_layer_(std::max(pairs_per_layer, 0)),
      pairs_(pairs_per_layer_ > 0 ? experts_per_layer(config) : std::vector<int32_t>{}),
      device_names_(std::move(devices)),
      counts_since_version_(static_cast<size_t>(config.n_layers * config.n_experts), 0),
      devices_total_(device_names_.size()) {
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (config.layer_is_moe[static_cast<size_t>(l)]) last_moe_layer_ = l;
  }
  reset_window(&current_, unix_now_ms());
}

void ActivationLog::commit_staged() {
  for (size_t i : staged_.counted) {
    ++current_.counts[i];
    ++counts_since_version_[i];
  }
  for (const auto& [layer, routing] : staged_.routings) {
    if (routing.top_k <= 0 ||
        routing.expert_ids.size() != static_cast<size_t>(routing.n_tokens * routing.top_k)) {
      continue;
    }
    for (int64_t t = 0; t < routing.n_tokens; ++t) {
      pairs_.add_token(
          static_cast<int32_t>(layer),
          std::span<const int32_t>(routing.expert_ids)
              .subspan(static_cast<size_t>(t * routing.top_k), static_cast<size_t>(routing.top_k)));
    }
  }
  staged_.routings.clear();
  add(&current_.served, staged_.served);
  add(&total_, staged_.served);
  add(&since_version_, staged_.served);
  staged_.served = ServedCounts{};
  staged_.counted.clear();
}

void ActivationLog::reset_window(Window* w, uint64_t start_ms) const {
  w->start_ms = start_ms;
  w->placement_version = version_;
  w->served = ServedCounts{};
  w->counts.assign(static_cast<size_t>(n_layers_ * n_experts_), 0);
  w->local.clear();
  w->peers.clear();
  w->devices.assign(device_names_.size(), DeviceWindow{});
}

void ActivationLog::add(ServedCounts* into, const ServedCounts& d) {
  into->activations += d.activations;
  into->local += d.local;
  into->remote += d.remote;
  into->offloaded += d.offloaded;
  into->remote_calls += d.remote_calls;
  into->remote_failures += d.remote_failures;
  into->tokens += d.tokens;
  into->requests += d.requests;
  into->steps += d.steps;
  into->local_steps += d.local_steps;
  into->remote_bytes += d.remote_bytes;
}

void ActivationLog::record_steps(uint64_t steps, uint64_t local_steps) {
  std::lock_guard<std::mutex> lock(mutex_);
  staged_.served.steps += steps;
  staged_.served.local_steps += local_steps;
}

void ActivationLog::record_layer(int64_t layer, const RoutingDecision& routing, uint64_t n_local,
                                 uint64_t n_offloaded) {
  const uint64_t n_pairs = static_cast<uint64_t>(routing.n_tokens * routing.top_k);
  ServedCounts d;
  d.activations = n_pairs;
  d.local = n_local;
  d.offloaded = n_offloaded;
  d.remote = n_pairs - n_local - n_offloaded;
  std::lock_guard<std::mutex> lock(mutex_);
  for (int32_t e : routing.expert_ids) {
    staged_.counted.push_back(static_cast<size_t>(layer * n_experts_ + e));
  }
  if (pairs_per_layer_ > 0) staged_.routings.emplace_back(layer, routing);
  add(&staged_.served, d);
  if (layer == last_moe_layer_) commit_staged();
}

void ActivationLog::record_local_call(double latency_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  current_.local.add(latency_us);
  local_total_.add(latency_us);
}

void ActivationLog::record_remote_call(const std::string& peer, double latency_us, uint64_t bytes,
                                       bool ok) {
  ServedCounts d;
  d.remote_calls = 1;
  d.remote_failures = ok ? 0 : 1;
  d.remote_bytes = bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  for (PeerWindow* p : {&current_.peers[peer], &peers_total_[peer]}) {
    if (ok) {
      p->latency.add(latency_us);
    } else {
      ++p->failures;
    }
    p->bytes += bytes;
  }
  add(&current_.served, d);
  add(&total_, d);
  add(&since_version_, d);
}

void ActivationLog::record_device_compute(int32_t device, uint64_t pairs, double busy_us) {
  if (device < 0 || static_cast<size_t>(device) >= device_names_.size() || pairs == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (DeviceWindow* w : {&current_.devices[static_cast<size_t>(device)],
                          &devices_total_[static_cast<size_t>(device)]}) {
    w->pairs += pairs;
    w->busy_us += busy_us;
  }
}

void ActivationLog::record_tokens(uint64_t n_tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A forward that stopped before its last MoE layer (a failed request)
  // still counts, with fewer layers.
  if (!staged_.empty()) commit_staged();
  staged_.served.tokens = n_tokens;
}

void ActivationLog::record_request() {
  ServedCounts d;
  d.requests = 1;
  std::lock_guard<std::mutex> lock(mutex_);
  add(&current_.served, d);
  add(&total_, d);
  add(&since_version_, d);
}

void ActivationLog::set_placement_version(uint64_t version, uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (version == version_) return;
  version_ = version;
  if (closed_.size() >= kMaxClosedWindows) {  // nobody collects (standalone)
    closed_.pop_front();
    closed_pairs_.pop_front();
  }
  closed_.emplace_back(std::move(current_), now_ms);
  closed_pairs_.push_back(take_pairs());
  current_ = Window{};
  reset_window(&current_, now_ms);
  since_version_ = ServedCounts{};
  std::fill(counts_since_version_.begin(), counts_since_version_.end(), 0);
}

proto::ActivationReport ActivationLog::to_report(const Window& w, uint64_t end_ms) const {
  proto::ActivationReport r;
  r.window_start_ms = w.start_ms;
  r.window_end_ms = end_ms;
  r.tokens = w.served.tokens;
  r.requests = w.served.requests;
  for (int64_t l = 0; l < n_layers_; ++l) {
    for (int64_t e = 0; e < n_experts_; ++e) {
      const uint32_t c = w.counts[static_cast<size_t>(l * n_experts_ + e)];
      if (c) r.counts.push_back({static_cast<uint16_t>(l), static_cast<uint16_t>(e), c});
    }
  }
  r.local_calls = w.local.count();
  r.local_mean_latency_us = w.local.mean_us();
  r.local_p99_latency_us = w.local.quantile_us(0.99);
  for (const auto& [peer, p] : w.peers) {
    r.remote.push_back({peer, p.latency.count() + p.failures, p.latency.mean_us(),
                        p.latency.quantile_us(0.99), p.bytes, p.failures});
  }
  r.placement_version = w.placement_version;
  r.local_hits = w.served.local;
  for (size_t d = 0; d < w.devices.size(); ++d) {
    if (w.devices[d].pairs > 0) {
      r.devices.push_back({device_names_[d], w.devices[d].pairs, w.devices[d].busy_us});
    }
  }
  return r;
}

std::vector<proto::ExpertPair> ActivationLog::take_pairs() {
  std::vector<proto::ExpertPair> out;
  if (pairs_per_layer_ == 0) return out;
  for (const CoActivationCounter::Pair& p : pairs_.top_pairs(pairs_per_layer_)) {
    out.push_back({p.layer, p.a, p.b, static_cast<uint32_t>(p.count)});
  }
  pairs_.clear();
  return out;
}

std::vector<proto::ActivationReport> ActivationLog::take_windows(uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<proto::ActivationReport> out;
  for (size_t i = 0; i < closed_.size(); ++i) {
    const auto& [w, end_ms] = closed_[i];
    if (w.served.activations > 0 || w.served.requests > 0 || w.served.remote_calls > 0) {
      out.push_back(to_report(w, end_ms));
      out.back().pairs = std::move(closed_pairs_[i]);
    }
  }
  closed_.clear();
  closed_pairs_.clear();
  const Window& w = current_;
  std::vector<proto::ExpertPair> pairs = take_pairs();
  if (w.served.activations > 0 || w.served.requests > 0 || w.served.remote_calls > 0) {
    out.push_back(to_report(w, now_ms));
    out.back().pairs = std::move(pairs);
  }
  reset_window(&current_, now_ms);
  return out;
}

ActivationSnapshot ActivationLog::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ActivationSnapshot s;
  s.placement_version = version_;
  // Cumulative figures include the forward in progress (reports do not).
  s.total = total_;
  add(&s.total, staged_.served);
  s.since_version = since_version_;
  add(&s.since_version, staged_.served);
  s.counts_since_version.assign(static_cast<size_t>(n_layers_),
                                std::vector<uint64_t>(static_cast<size_t>(n_experts_), 0));
  for (int64_t l = 0; l < n_layers_; ++l) {
    for (int64_t e = 0; e < n_experts_; ++e) {
      s.counts_since_version[static_cast<size_t>(l)][static_cast<size_t>(e)] =
          counts_since_version_[static_cast<size_t>(l * n_experts_ + e)];
    }
  }
  for (size_t i : staged_.counted) {
    ++s.counts_since_version[i / static_cast<size_t>(n_experts_)]
                            [i % static_cast<size_t>(n_experts_)];
  }
  for (const auto& [peer, p] : peers_total_) {
    s.peers.push_back({peer, p.latency.count() + p.failures, p.failures, p.bytes,
                       p.latency.mean_us(), p.latency.quantile_us(0.99), p.latency});
  }
  s.local_calls = local_total_.count();
  s.local_mean_latency_us = local_total_.mean_us();
  s.local_p99_latency_us = local_total_.quantile_us(0.99);
  s.local_latency = local_total_;
  for (size_t d = 0; d < device_names_.size(); ++d) {
    s.devices.push_back({device_names_[d], devices_total_[d].pairs, devices_total_[d].busy_us});
  }
  return s;
}

ServedCounts ActivationLog::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ServedCounts t = total_;
  add(&t, staged_.served);  // the forward in progress too
  return t;
}

}  // namespace dancemoe::node
