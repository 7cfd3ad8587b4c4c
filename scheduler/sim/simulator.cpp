#include "scheduler/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include "common/placement/coactivation.h"
#include "scheduler/placement/costs.h"
#include "scheduler/placement/policy.h"

namespace dancemoe::sim {
namespace {

using placement::ExpertIndex;
using placement::Placement;

enum class Kind : uint8_t {
  kArrival,       // a: request
  kDenseDone,     // a: request
  kLocalDone,     // a: request
  kRemoteArrive,  // a: call
  kRemoteDone,    // a: call
  kReplyArrive,   // a: call
  kReplace,       // a: unused
  kLinkTry,       // a: link (from * n_nodes + to) with queued migration chunks
  kChunkArrive,   // a: transfer (its last chunk)
  kLoadDone,      // a: transfer
  kReport,        // a: unused; every node closes a report window
};

struct Event {
  double t;
  uint64_t seq;
  Kind kind;
  int32_t a;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Active {
  int32_t token = 0;
  int32_t layer = 0;
  int32_t pending = 0;
  double routed_s = 0.0;       // when the layer's experts were dispatched
  double token_start_s = 0.0;  // when the current token's first layer began
};

struct Call {
  int32_t request = 0;
  int32_t dest = 0;
  double sent_s = 0.0;
  std::vector<int16_t> experts;  // expert ids within the layer
};

struct Transfer {
  int32_t dest = 0;
  int32_t device = 0;
  int32_t source = -1;  // node sending the weights, -1: loaded locally
  uint64_t bytes = 0;
  uint64_t bytes_left = 0;
};

// One run of the event-driven simulation: the cluster, its queue of events
// and the statistics it gathers. Single-threaded; one run() per object.
class ClusterSimulation {
 public:
  ClusterSimulation(const SimConfig& config, const Workload& workload, std::string policy);
  Status run(SimResult* out);

 private:
  // The steps of run().
  Status place_initially();
  void schedule_arrivals_and_rounds();
  void handle(const Event& e);
  void summarize();

  void push(double t, Kind kind, int32_t a) { queue_.push(Event{t, seq_++, kind, a}); }
  void apply(const Placement& placement);
  placement::Problem problem_now(double now) const;
  double device_time(int32_t node, int32_t device, int32_t n_experts) const;
  double send(int32_t from, int32_t to, uint64_t bytes, double now);
  void start_layer(int32_t r, double now);
  void dispatch(int32_t r, double now);
  void finish_part(int32_t r, double now);
  void run_call(int32_t c, double now);
  void replace(double now);
  void link_try(int32_t link, double now);
  void commit(double now);
  void close_reports();
  size_t bucket(double t);

  const SimConfig& config_;
  const Workload& workload_;
  std::string policy_;
  int32_t n_nodes_;
  int32_t n_layers_;
  int32_t n_experts_;
  int32_t top_k_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t seq_ = 0;

  placement::Problem base_;                       // cluster and model for the policies
  Placement active_;                              // placement in force
  std::vector<std::vector<int8_t>> device_of_;    // [node][flat expert], -1 = not held
  std::vector<std::vector<int32_t>> holders_;     // [flat expert] -> nodes
  std::vector<std::vector<double>> device_busy_;  // [node][device]
  std::vector<double> link_busy_;                 // [from * n_nodes + to]

  std::vector<Active> active_requests_;
  std::vector<Call> calls_;
  std::vector<int32_t> free_calls_;

  // Statistics window since the last adopted placement.
  double window_start_ = 0.0;
  std::vector<std::vector<double>> window_counts_;  // [node][flat expert]
  // Co-activation: counted per report window, then what a node reports
  // (coactivation.h) summed over the statistics window, [node] -> (a, b) -> count.
  std::vector<CoActivationCounter> report_pairs_;
  std::vector<std::map<std::pair<ExpertIndex, ExpertIndex>, double>> window_pairs_;
  std::vector<int32_t> token_experts_;  // scratch
  std::vector<double> remote_sum_, local_sum_;
  std::vector<int64_t> remote_n_, local_n_;

  // Migration in progress.
  bool migrating_ = false;
  Placement pending_;
  std::vector<Transfer> transfers_;
  int32_t transfers_left_ = 0;
  std::vector<std::vector<int32_t>> link_queue_;  // [link] -> transfers, head first
  std::vector<uint64_t> link_queued_bytes_;       // [link]

  std::vector<std::vector<double>> latencies_;        // [node], per request
  std::vector<std::vector<double>> token_latencies_;  // [node], per token
  std::vector<int64_t> remote_bytes_;                 // [node], both directions
  std::vector<int64_t> local_acts_, total_acts_;
  std::vector<int64_t> steps_, local_steps_, messages_;
  std::vector<int64_t> bucket_local_, bucket_total_, bucket_done_;
  std::vector<int64_t> bucket_steps_, bucket_local_steps_;
  std::vector<double> bucket_latency_;
  SimResult* out_ = nullptr;
};

ClusterSimulation::ClusterSimulation(const SimConfig& config, const Workload& workload,
                                     std::string policy)
    : config_(config),
      workload_(workload),
      policy_(std::move(policy)),
      n_nodes_(static_cast<int32_t>(config.nodes.size())),
      n_layers_(config.model.n_layers),
      n_experts_(config.model.n_experts),
      top_k_(config.model.top_k) {
  base_.model = placement::ModelShape(std::vector<placement::LayerShape>(
      n_layers_, placement::LayerShape{n_experts_, config.model.expert_bytes}));
  base_.activations.experts_per_token = top_k_;
  for (const SimNode& node : config.nodes) {
    placement::Node pn;
    pn.id = node.id;
    for (const SimDevice& device : node.devices) {
      pn.devices.push_back(
          placement::Device{device.id, device.expert_budget_bytes, device.load_bytes_per_s});
    }
    // Weights come over a link at the migration share, then into the device.
    for (placement::Device& device : pn.devices) {
      const double link = config.placement.migration_link_share * config.link.bandwidth_bytes_per_s;
      device.load_bytes_per_s = 1.0 / (1.0 / device.load_bytes_per_s + 1.0 / link);
    }
    // Before any measurement: one round trip plus both transfers plus the
    // remote expert, minus nothing (a local call costs about the same compute).
    // The measurement a node would report: one token through one expert.
    for (const SimDevice& device : node.devices) {
      pn.expert_compute_s += (device.expert_a_s + device.expert_b_s) / node.devices.size();
    }
    pn.remote_penalty_s =
        config.link.rtt_s + 2.0 * static_cast<double>(config.model.hidden_bytes_per_token) /
                                config.link.bandwidth_bytes_per_s;
    base_.cluster.nodes.push_back(std::move(pn));
  }
  const size_t n_total = static_cast<size_t>(n_layers_) * n_experts_;
  device_busy_.resize(n_nodes_);
  for (int32_t n = 0; n < n_nodes_; ++n) device_busy_[n].assign(config.nodes[n].devices.size(), 0);
  link_busy_.assign(static_cast<size_t>(n_nodes_) * n_nodes_, 0.0);
  link_queue_.resize(static_cast<size_t>(n_nodes_) * n_nodes_);
  link_queued_bytes_.assign(static_cast<size_t>(n_nodes_) * n_nodes_, 0);
  active_requests_.resize(workload.requests().size());
  window_counts_.assign(n_nodes_, std::vector<double>(n_total, 0.0));
  report_pairs_.assign(n_nodes_, CoActivationCounter(std::vector<int32_t>(n_layers_, n_experts_)));
  window_pairs_.resize(n_nodes_);
  token_experts_.resize(top_k_);
  remote_sum_.assign(n_nodes_, 0);
  local_sum_.assign(n_nodes_, 0);
  remote_n_.assign(n_nodes_, 0);
  local_n_.assign(n_nodes_, 0);
  latencies_.resize(n_nodes_);
  token_latencies_.resize(n_nodes_);
  remote_bytes_.assign(n_nodes_, 0);
  local_acts_.assign(n_nodes_, 0);
  total_acts_.assign(n_nodes_, 0);
  steps_.assign(n_nodes_, 0);
  local_steps_.assign(n_nodes_, 0);
  messages_.assign(n_nodes_, 0);
}

void ClusterSimulation::apply(const Placement& placement) {
  active_ = placement;
  const size_t n_total = static_cast<size_t>(n_layers_) * n_experts_;
  device_of_.assign(n_nodes_, std::vector<int8_t>(n_total, -1));
  holders_.assign(n_total, {});
  for (int32_t n = 0; n < n_nodes_; ++n) {
    for (size_t g = 0; g < placement.experts[n].size(); ++g) {
      for (ExpertIndex x : placement.experts[n][g]) {
        device_of_[n][x] = static_cast<int8_t>(g);
        holders_[x].push_back(n);
      }
    }
  }
}

placement::Problem ClusterSimulation::problem_now(double now) const {
  placement::Problem p = base_;
  p.activations.counts = window_counts_;
  p.activations.window_s = std::max(now - window_start_, 1e-9);
  p.horizon_s =
      config_.placement.horizon_s > 0 ? config_.placement.horizon_s : config_.placement.period_s;
  for (int32_t n = 0; n < n_nodes_; ++n) {
    if (remote_n_[n] > 0 && local_n_[n] > 0) {
      p.cluster.nodes[n].remote_penalty_s =
          std::max(0.0, remote_sum_[n] / remote_n_[n] - local_sum_[n] / local_n_[n]);
    }
  }
  p.activations.pairs.resize(n_nodes_);
  for (int32_t n = 0; n < n_nodes_; ++n) {
    for (const auto& [key, count] : window_pairs_[n]) {
      p.activations.pairs[n].push_back({key.first, key.second, count});
    }
  }
  p.current = active_;
  return p;
}

double ClusterSimulation::device_time(int32_t node, int32_t device, int32_t n_experts) const {
  const SimDevice& d = config_.nodes[node].devices[device];
  return n_experts * (d.expert_a_s + d.expert_b_s * 1.0);  // decode: one token per call
}

// Queues `bytes` on the link from -> to; returns the arrival time.
double ClusterSimulation::send(int32_t from, int32_t to, uint64_t bytes, double now) {
  double& busy = link_busy_[static_cast<size_t>(from) * n_nodes_ + to];
  const double start = std::max(now, busy);
  busy = start + static_cast<double>(bytes) / config_.link.bandwidth_bytes_per_s;
  return busy + config_.link.rtt_s / 2.0 + config_.link.message_overhead_s;
}

size_t ClusterSimulation::bucket(double t) {
  const size_t b = static_cast<size_t>(t / config_.timeline_bucket_s);
  if (b >= bucket_total_.size()) {
    bucket_local_.resize(b + 1, 0);
    bucket_total_.resize(b + 1, 0);
    bucket_done_.resize(b + 1, 0);
    bucket_steps_.resize(b + 1, 0);
    bucket_local_steps_.resize(b + 1, 0);
    bucket_latency_.resize(b + 1, 0.0);
  }
  return b;
}

// Dense compute of the current (token, layer) on the node's device 0.
void ClusterSimulation::start_layer(int32_t r, double now) {
  const int32_t n = workload_.requests()[r].node;
  double& busy = device_busy_[n][0];
  const double start = std::max(now, busy);
  busy = start + config_.nodes[n].dense_s_per_layer;
  push(busy, Kind::kDenseDone, r);
}

void ClusterSimulation::dispatch(int32_t r, double now) {
  const SimRequest& request = workload_.requests()[r];
  Active& a = active_requests_[r];
  const int32_t n = request.node;
  const int16_t* experts =
      request.experts.data() +
      (static_cast<size_t>(a.token) * n_layers_ + a.layer) * static_cast<size_t>(top_k_);
  const ExpertIndex layer_base = a.layer * n_experts_;
  const size_t b = bucket(now);
  for (int32_t j = 0; j < top_k_; ++j) token_experts_[j] = experts[j];
  report_pairs_[n].add_token(a.layer, token_experts_);
  std::vector<int32_t> local_per_device(config_.nodes[n].devices.size(), 0);
  std::vector<int32_t> dests;
  std::vector<int32_t> dest_call;
  int32_t n_local = 0;
  for (int32_t j = 0; j < top_k_; ++j) {
    const ExpertIndex x = layer_base + experts[j];
    window_counts_[n][x] += 1.0;
    ++total_acts_[n];
    ++bucket_total_[b];
    const int8_t g = device_of_[n][x];
    if (g >= 0) {
      ++local_per_device[g];
      ++n_local;
      ++local_acts_[n];
      ++bucket_local_[b];
      continue;
    }
    // Remote: reuse a destination of this layer if it holds x, else the
    // holder expected to start it first.
    int32_t chosen = -1;
    for (size_t i = 0; i < dests.size() && chosen < 0; ++i) {
      if (device_of_[dests[i]][x] >= 0) chosen = static_cast<int32_t>(i);
    }
    if (chosen < 0) {
      int32_t best = -1;
      double best_start = 0.0;
      for (int32_t m : holders_[x]) {
        const double link = std::max(now, link_busy_[static_cast<size_t>(n) * n_nodes_ + m]);
        const double start = std::max(link, device_busy_[m][device_of_[m][x]]);
        if (best < 0 || start < best_start) {
          best = m;
          best_start = start;
        }
      }
      int32_t c;
      if (!free_calls_.empty()) {
        c = free_calls_.back();
        free_calls_.pop_back();
      } else {
        c = static_cast<int32_t>(calls_.size());
        calls_.emplace_back();
      }
      calls_[c].request = r;
      calls_[c].dest = best;
      calls_[c].experts.clear();
      dests.push_back(best);
      dest_call.push_back(c);
      chosen = static_cast<int32_t>(dests.size()) - 1;
    }
    calls_[dest_call[chosen]].experts.push_back(static_cast<int16_t>(x));
  }
  a.pending = static_cast<int32_t>(dests.size()) + (n_local > 0 ? 1 : 0);
  a.routed_s = now;
  ++steps_[n];
  local_steps_[n] += dests.empty() ? 1 : 0;
  ++bucket_steps_[b];
  bucket_local_steps_[b] += dests.empty() ? 1 : 0;
  messages_[n] += static_cast<int64_t>(dests.size());
  remote_bytes_[n] += 2 * static_cast<int64_t>(dests.size()) *
                      static_cast<int64_t>(config_.model.hidden_bytes_per_token);
  // Remote calls first (DESIGN.md §3), then local compute overlaps them.
  for (int32_t c : dest_call) {
    calls_[c].sent_s = now;
    push(send(n, calls_[c].dest, config_.model.hidden_bytes_per_token, now), Kind::kRemoteArrive,
         c);
  }
  if (n_local > 0) {
    double done = now;
    for (size_t g = 0; g < local_per_device.size(); ++g) {
      if (local_per_device[g] == 0) continue;
      double& busy = device_busy_[n][g];
      busy = std::max(now, busy) + device_time(n, static_cast<int32_t>(g), local_per_device[g]);
      done = std::max(done, busy);
    }
    push(done, Kind::kLocalDone, r);
  }
}

void ClusterSimulation::run_call(int32_t c, double now) {
  const Call& call = calls_[c];
  const int32_t m = call.dest;
  std::vector<int32_t> per_device(config_.nodes[m].devices.size(), 0);
  for (int16_t x : call.experts) {
    const int8_t g = device_of_[m][x];
    ++per_device[g >= 0 ? g : 0];  // evicted by a commit meanwhile: still served
  }
  double done = now;
  for (size_t g = 0; g < per_device.size(); ++g) {
    if (per_device[g] == 0) continue;
    double& busy = device_busy_[m][g];
    busy = std::max(now, busy) + device_time(m, static_cast<int32_t>(g), per_device[g]);
    done = std::max(done, busy);
  }
  push(done, Kind::kRemoteDone, c);
}

void ClusterSimulation::finish_part(int32_t r, double now) {
  Active& a = active_requests_[r];
  if (--a.pending > 0) return;
  if (++a.layer < n_layers_) {
    start_layer(r, now);
    return;
  }
  a.layer = 0;
  const SimRequest& request = workload_.requests()[r];
  token_latencies_[request.node].push_back(now - a.token_start_s);
  a.token_start_s = now;
  if (++a.token < request.n_tokens) {
    start_layer(r, now);
    return;
  }
  const double latency = now - request.arrival_s;
  latencies_[request.node].push_back(latency);
  const size_t b = bucket(now);
  ++bucket_done_[b];
  bucket_latency_[b] += latency;
  out_->end_s = std::max(out_->end_s, now);
}

void ClusterSimulation::replace(double now) {
  if (migrating_) return;  // the previous re-placement is still loading
  double observed = 0.0;
  for (const auto& row : window_counts_) {
    for (double v : row) observed += v;
  }
  if (observed == 0.0) return;
  close_reports();
  const placement::Problem problem = problem_now(now);
  Result<Placement> proposed = placement::solve(policy_, problem);
  if (!proposed.is_ok()) return;  // infeasible cannot happen here: the initial one was feasible
  const placement::GateDecision gate = placement::evaluate_gate(
      problem, active_, *proposed, placement::find_policy(policy_)->objective);
  ReplacementRecord record;
  record.t_s = now;
  record.cost_current_s = gate.cost_current_s;
  record.cost_new_s = gate.cost_new_s;
  record.migration_s = gate.migration_s;
  const bool changes = proposed->experts != active_.experts;
  record.adopt = changes && (gate.adopt || !config_.placement.gate);
  if (record.adopt) {
    // One transfer per (node, device, expert) that the new placement adds.
    transfers_.clear();
    for (int32_t n = 0; n < n_nodes_; ++n) {
      for (size_t g = 0; g < proposed->experts[n].size(); ++g) {
        const auto& before = active_.experts[n][g];
        for (ExpertIndex x : proposed->experts[n][g]) {
          if (std::binary_search(before.begin(), before.end(), x)) continue;
          Transfer t;
          t.dest = n;
          t.device = static_cast<int32_t>(g);
          t.bytes = t.bytes_left = config_.model.expert_bytes;
          if (device_of_[n][x] < 0) {
            // Fetch from the holder with the least migration traffic queued towards n.
            uint64_t best = 0;
            for (int32_t m : holders_[x]) {
              const uint64_t queued = link_queued_bytes_[static_cast<size_t>(m) * n_nodes_ + n];
              if (t.source < 0 || queued < best) {
                t.source = m;
                best = queued;
              }
            }
            link_queued_bytes_[static_cast<size_t>(t.source) * n_nodes_ + n] += t.bytes;
          }
          transfers_.push_back(t);
          record.bytes += t.bytes;
        }
      }
    }
    record.experts_added = static_cast<int64_t>(transfers_.size());
    pending_ = *proposed;
    migrating_ = true;
    transfers_left_ = static_cast<int32_t>(transfers_.size());
    for (int32_t i = 0; i < static_cast<int32_t>(transfers_.size()); ++i) {
      const Transfer& t = transfers_[i];
      if (t.source < 0) {  // a move between devices of one node: reload locally
        push(now + static_cast<double>(t.bytes) /
                       config_.nodes[t.dest].devices[t.device].load_bytes_per_s,
             Kind::kLoadDone, i);
        continue;
      }
      const int32_t link = t.source * n_nodes_ + t.dest;
      link_queue_[link].push_back(i);
      if (link_queue_[link].size() == 1) push(now, Kind::kLinkTry, link);
    }
    if (transfers_.empty()) commit(now);  // only evictions
  }
  out_->replacements.push_back(record);
}

// Sends the next migration chunk on `link` if the link is idle, then waits
// out the throttle gap; inference messages queued meanwhile go first.
void ClusterSimulation::link_try(int32_t link, double now) {
  std::vector<int32_t>& queue = link_queue_[link];
  if (queue.empty()) return;
  double& busy = link_busy_[link];
  if (busy > now) {
    push(busy, Kind::kLinkTry, link);
    return;
  }
  Transfer& t = transfers_[queue.front()];
  const uint64_t chunk = std::min<uint64_t>(t.bytes_left, config_.placement.chunk_bytes);
  const double wire_s = static_cast<double>(chunk) / config_.link.bandwidth_bytes_per_s;
  busy = now + wire_s;
  t.bytes_left -= chunk;
  link_queued_bytes_[link] -= chunk;
  if (t.bytes_left == 0) {
    push(busy + config_.link.rtt_s / 2.0, Kind::kChunkArrive, queue.front());
    queue.erase(queue.begin());
  }
  if (!queue.empty()) {
    push(now + wire_s / config_.placement.migration_link_share, Kind::kLinkTry, link);
  }
}

void ClusterSimulation::commit(double now) {
  apply(pending_);
  migrating_ = false;
  ++out_->migrations;
  out_->experts_moved += static_cast<int64_t>(transfers_.size());
  out_->bytes_moved += static_cast<uint64_t>(transfers_.size()) * config_.model.expert_bytes;
  if (!out_->replacements.empty()) out_->replacements.back().committed_at_s = now;
  // A new statistics window starts with the new placement (the paper's).
  window_start_ = now;
  for (auto& row : window_counts_) std::fill(row.begin(), row.end(), 0.0);
  for (CoActivationCounter& counter : report_pairs_) counter.clear();
  for (auto& pairs : window_pairs_) pairs.clear();
  std::fill(remote_sum_.begin(), remote_sum_.end(), 0.0);
  std::fill(local_sum_.begin(), local_sum_.end(), 0.0);
  std::fill(remote_n_.begin(), remote_n_.end(), 0);
  std::fill(local_n_.begin(), local_n_.end(), 0);
}

Status ClusterSimulation::run(SimResult* out) {
  out_ = out;
  out->policy = policy_;
  DMOE_RETURN_IF_ERROR(place_initially());
  schedule_arrivals_and_rounds();
  while (!queue_.empty()) {
    const Event e = queue_.top();
    queue_.pop();
    ++out->events;
    handle(e);
  }
  summarize();
  return Status::ok();
}

// The initial placement comes from the profile (a profiling run before serving).
Status ClusterSimulation::place_initially() {
  placement::Problem initial = base_;
  initial.activations.counts = workload_.profile();
  initial.activations.window_s = 1.0;
  if (workload_.profile_pairs().size() == static_cast<size_t>(n_nodes_)) {
    initial.activations.pairs = workload_.profile_pairs();
  }
  initial.horizon_s = config_.placement.period_s > 0 ? config_.placement.period_s : 300.0;
  DMOE_ASSIGN_OR_RETURN(Placement first, placement::solve(policy_, initial));
  out_->method = first.method;
  out_->initial_local_hit_ratio = placement::local_hit_ratio(initial, first);
  apply(first);
  return Status::ok();
}

void ClusterSimulation::schedule_arrivals_and_rounds() {
  for (int32_t r = 0; r < static_cast<int32_t>(workload_.requests().size()); ++r) {
    push(workload_.requests()[r].arrival_s, Kind::kArrival, r);
  }
  if (config_.placement.period_s > 0) {
    for (double t = config_.placement.period_s; t < config_.duration_s;
         t += config_.placement.period_s) {
      push(t, Kind::kReplace, 0);
    }
    // Only re-placement reads the reports' pairs.
    for (double t = config_.placement.report_interval_s; t < config_.duration_s;
         t += config_.placement.report_interval_s) {
      push(t, Kind::kReport, 0);
    }
  }
}

void ClusterSimulation::handle(const Event& e) {
  switch (e.kind) {
    case Kind::kArrival:
      active_requests_[e.a].token_start_s = e.t;
      start_layer(e.a, e.t);
      break;
    case Kind::kDenseDone:
      dispatch(e.a, e.t);
      break;
    case Kind::kLocalDone: {
      const int32_t n = workload_.requests()[e.a].node;
      local_sum_[n] += e.t - active_requests_[e.a].routed_s;
      ++local_n_[n];
      finish_part(e.a, e.t);
      break;
    }
    case Kind::kRemoteArrive:
      run_call(e.a, e.t);
      break;
    case Kind::kRemoteDone: {
      const Call& call = calls_[e.a];
      const int32_t origin = workload_.requests()[call.request].node;
      push(send(call.dest, origin, config_.model.hidden_bytes_per_token, e.t), Kind::kReplyArrive,
           e.a);
      break;
    }
    case Kind::kReplyArrive: {
      const Call& call = calls_[e.a];
      const int32_t r = call.request;
      const int32_t origin = workload_.requests()[r].node;
      remote_sum_[origin] += e.t - call.sent_s;
      ++remote_n_[origin];
      free_calls_.push_back(e.a);
      finish_part(r, e.t);
      break;
    }
    case Kind::kReplace:
      replace(e.t);
      break;
    case Kind::kLinkTry:
      link_try(e.a, e.t);
      break;
    case Kind::kChunkArrive: {
      const Transfer& t = transfers_[e.a];
      push(e.t + static_cast<double>(t.bytes) /
                     config_.nodes[t.dest].devices[t.device].load_bytes_per_s,
           Kind::kLoadDone, e.a);
      break;
    }
    case Kind::kLoadDone:
      if (--transfers_left_ == 0) commit(e.t);
      break;
    case Kind::kReport:
      close_reports();
      break;
  }
}

// Every node closes its report window: its strongest pairs join the
// statistics window (what the scheduler stores), the counts restart.
void ClusterSimulation::close_reports() {
  for (int32_t n = 0; n < n_nodes_; ++n) {
    for (const CoActivationCounter::Pair& p :
         report_pairs_[n].top_pairs(config_.placement.coactivation_pairs)) {
      window_pairs_[n][{p.layer * n_experts_ + p.a, p.layer * n_experts_ + p.b}] +=
          static_cast<double>(p.count);
    }
    report_pairs_[n].clear();
  }
}

// Per-node and overall latency statistics, and the timeline.
void ClusterSimulation::summarize() {
  // Mean, p50 and p99 of `values`.
  auto quantiles = [](std::vector<double> values, double* mean, double* p50, double* p99) {
    if (values.empty()) return;
    double sum = 0.0;
    for (double v : values) sum += v;
    *mean = sum / values.size();
    std::sort(values.begin(), values.end());
    *p50 = values[static_cast<size_t>(0.50 * (values.size() - 1))];
    *p99 = values[static_cast<size_t>(std::ceil(0.99 * (values.size() - 1)))];
  };
  auto latency_stats = [&](std::vector<double> requests, std::vector<double> tokens,
                           LatencyStats* s) {
    s->requests = static_cast<int64_t>(requests.size());
    s->tokens = static_cast<int64_t>(tokens.size());
    quantiles(std::move(requests), &s->mean_s, &s->p50_s, &s->p99_s);
    quantiles(std::move(tokens), &s->token_mean_s, &s->token_p50_s, &s->token_p99_s);
  };
  std::vector<double> all, all_tokens;
  for (int32_t n = 0; n < n_nodes_; ++n) {
    LatencyStats s;
    latency_stats(latencies_[n], token_latencies_[n], &s);
    s.remote_bytes = remote_bytes_[n];
    s.local_activations = local_acts_[n];
    s.total_activations = total_acts_[n];
    s.steps = steps_[n];
    s.local_steps = local_steps_[n];
    s.remote_messages = messages_[n];
    out_->node_ids.push_back(config_.nodes[n].id);
    out_->nodes.push_back(s);
    all.insert(all.end(), latencies_[n].begin(), latencies_[n].end());
    all_tokens.insert(all_tokens.end(), token_latencies_[n].begin(), token_latencies_[n].end());
    out_->overall.remote_bytes += remote_bytes_[n];
    out_->overall.local_activations += local_acts_[n];
    out_->overall.total_activations += total_acts_[n];
    out_->overall.steps += steps_[n];
    out_->overall.local_steps += local_steps_[n];
    out_->overall.remote_messages += messages_[n];
  }
  latency_stats(std::move(all), std::move(all_tokens), &out_->overall);
  for (size_t b = 0; b < bucket_total_.size(); ++b) {
    TimelinePoint p;
    p.t_s = b * config_.timeline_bucket_s;
    p.local_ratio =
        bucket_total_[b] > 0 ? static_cast<double>(bucket_local_[b]) / bucket_total_[b] : 0.0;
    p.local_step_ratio =
        bucket_steps_[b] > 0 ? static_cast<double>(bucket_local_steps_[b]) / bucket_steps_[b] : 0.0;
    p.completed = bucket_done_[b];
    p.mean_latency_s = bucket_done_[b] > 0 ? bucket_latency_[b] / bucket_done_[b] : 0.0;
    out_->timeline.push_back(p);
  }
}

// A workload made by hand (Workload::from_requests) must fit the config.
Status check_workload(const SimConfig& config, const Workload& workload) {
  const SimModel& m = config.model;
  const size_t per_token = static_cast<size_t>(m.n_layers) * m.top_k;
  const size_t n_total = static_cast<size_t>(m.n_layers) * m.n_experts;
  if (workload.profile().size() != config.nodes.size()) {
    return invalid_argument("workload: profile has " + std::to_string(workload.profile().size()) +
                            " nodes, the config " + std::to_string(config.nodes.size()));
  }
  for (const auto& row : workload.profile()) {
    if (row.size() != n_total) return invalid_argument("workload: profile row of wrong length");
  }
  for (const SimRequest& r : workload.requests()) {
    if (r.node < 0 || r.node >= static_cast<int32_t>(config.nodes.size()) || r.n_tokens <= 0 ||
        r.experts.size() != per_token * r.n_tokens || !(r.arrival_s >= 0)) {
      return invalid_argument("workload: a request does not fit the config (node " +
                              std::to_string(r.node) + ", " + std::to_string(r.n_tokens) +
                              " tokens, " + std::to_string(r.experts.size()) + " expert ids)");
    }
    for (int16_t e : r.experts) {
      if (e < 0 || e >= m.n_experts) {
        return invalid_argument("workload: expert id " + std::to_string(e) + " out of range");
      }
    }
  }
  return Status::ok();
}

}  // namespace

Result<SimResult> simulate(const SimConfig& config, const Workload& workload,
                           const std::string& policy) {
  DMOE_RETURN_IF_ERROR(validate_sim_config(config));
  if (placement::find_policy(policy) == nullptr) {
    return invalid_argument("unknown placement policy '" + policy + "'");
  }
  for (const SimNode& node : config.nodes) {
    if (node.devices.size() > 127) {
      return invalid_argument("node '" + node.id + "': at most 127 devices per node");
    }
  }
  DMOE_RETURN_IF_ERROR(check_workload(config, workload));
  SimResult result;
  ClusterSimulation simulation(config, workload, policy);
  DMOE_RETURN_IF_ERROR(simulation.run(&result));
  return result;
}

}  // namespace dancemoe::sim
