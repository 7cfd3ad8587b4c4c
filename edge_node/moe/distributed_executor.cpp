#include "edge_node/moe/distributed_executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/net/poller.h"
#include "common/proto/codec.h"
#include "edge_node/moe/weight_gathering.h"
#include "edge_node/remote/replica_chooser.h"
#include "edge_node/remote/wire_tensor.h"
#include "kernels/kernels.h"

namespace dancemoe::node {
namespace {

using SteadyClock = std::chrono::steady_clock;

double micros(SteadyClock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

struct DistributedMoeExecutor::Call {
  uint64_t call_id = 0;
  uint64_t sequence = 0;
  int32_t peer = -1;
  PeerLink* link = nullptr;
  std::vector<size_t> pieces;
  std::vector<int32_t> tokens;  // the layer token of each row of the call
  uint64_t n_pairs = 0;
  uint64_t bytes = 0;  // tensor bytes both ways
  SteadyClock::time_point sent_at;
  SteadyClock::time_point deadline;
  enum class State { kPending, kDone, kFailed } state = State::kPending;
  std::vector<float> result;  // [tokens.size(), hidden]
  double compute_us = 0;
};

DistributedMoeExecutor::DistributedMoeExecutor(const ModelConfig& config, const ExpertStore& store,
                                               ExpertComputer& computer,
                                               const HolderTableHandle& table, PeerPool& peers,
                                               OffloadCache* offload, ActivationLog& log,
                                               DistributedExecutorOptions options)
    : config_(config),
      store_(store),
      computer_(computer),
      table_(table),
      peers_(peers),
      offload_(offload),
      log_(log),
      options_(std::move(options)) {
  if (options_.max_attempts < 1) options_.max_attempts = 1;
  if (options_.max_call_tokens < 1) options_.max_call_tokens = 1;
}

DistributedMoeExecutor::~DistributedMoeExecutor() = default;

Status DistributedMoeExecutor::run_layer(int64_t layer, const float* x, int64_t n_tokens,
                                         int64_t hidden, const RoutingDecision& routed,
                                         float* out) {
  const RoutingDecision& routing = replay_ != nullptr ? replay_->rewrite(layer, routed) : routed;
  const std::shared_ptr<const HolderTable> table = table_.get();
  const int64_t n_experts = config_.n_experts;
  group_by_expert(routing, n_experts, &by_expert_);
  pieces_.clear();
  calls_.clear();
  peers_.release_retired();  // no call of an earlier layer is in flight
  failures_.clear();
  pinned_.clear();

  // 1. Local experts become jobs; the others become pieces to send.
  size_t n_jobs = 0;
  uint64_t n_local_pairs = 0;
  expert_local_.assign(static_cast<size_t>(n_experts), 0);
  for (int64_t e = 0; e < n_experts; ++e) {
    ExpertJob& source = by_expert_[static_cast<size_t>(e)];
    if (source.tokens.empty()) continue;
    std::shared_ptr<const ExpertWeights> w;
    if (table->is_local(layer, e)) {
      w = store_.get({static_cast<int32_t>(layer), static_cast<int32_t>(e)});
    }
    if (w != nullptr) {
      expert_local_[static_cast<size_t>(e)] = 1;
      if (jobs_.size() <= n_jobs) jobs_.emplace_back();
      ExpertJob& job = jobs_[n_jobs++];
      assign_expert(*w, &job);
      job.tokens.swap(source.tokens);
      job.weights.swap(source.weights);
      n_local_pairs += job.tokens.size();
      pinned_.push_back(std::move(w));
      continue;
    }
    Piece piece;
    piece.expert = static_cast<int32_t>(e);
    piece.tokens.swap(source.tokens);
    piece.weights.swap(source.weights);
    if (table->remote_holders(layer, e).empty()) {
      piece.state = Piece::State::kOffload;
      failures_.push_back("expert " + std::to_string(e) + ": no node holds it in placement v" +
                          std::to_string(table->version()));
    }
    pieces_.push_back(std::move(piece));
  }

  // A (token, layer) step is local when every expert of the token is.
  uint64_t n_local_steps = 0;
  for (int64_t t = 0; t < routing.n_tokens; ++t) {
    bool all = true;
    for (int64_t j = 0; j < routing.top_k && all; ++j) {
      const int32_t e = routing.expert(t, j);
      all = e >= 0 && e < n_experts && expert_local_[static_cast<size_t>(e)];
    }
    n_local_steps += all ? 1 : 0;
  }
  log_.record_steps(static_cast<uint64_t>(routing.n_tokens), n_local_steps);

  // 2. Send before computing anything here.
  std::vector<size_t> pending;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (pieces_[i].state == Piece::State::kPending) pending.push_back(i);
  }
  first_dispatch_ = true;
  if (!pending.empty()) dispatch(layer, x, n_tokens, hidden, *table, pending);
  first_dispatch_ = false;
  // Gathered experts join the local jobs; one whose weights could not be
  // fetched is sent after all.
  const size_t n_local_jobs = n_jobs;
  n_jobs = gather(layer, *table, n_jobs);
  pending.clear();
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (pieces_[i].state == Piece::State::kPending) pending.push_back(i);
  }
  if (!pending.empty()) dispatch(layer, x, n_tokens, hidden, *table, pending);
  if (!options_.overlap) wait_for_calls(hidden);

  // 3. Local experts, overlapping the network.
  if (n_jobs > 0) {
    const SteadyClock::time_point start = SteadyClock::now();
    computer_.run(std::span<const ExpertJob>(jobs_.data(), n_jobs), x, n_tokens, hidden, out);
    const double us = micros(SteadyClock::now() - start);
    log_.record_local_call(us);
    record_device_compute(n_jobs);
    uint64_t pairs = 0;
    for (size_t j = 0; j < n_jobs; ++j) pairs += jobs_[j].tokens.size();
    if (pairs > 0) {
      const double per_pair = us / static_cast<double>(pairs);
      local_us_per_pair_ = local_us_per_pair_ == 0.0
                               ? per_pair
                               : local_us_per_pair_ + 0.2 * (per_pair - local_us_per_pair_);
    }
  }
  // Gathered experts are computed here but not held here: offloaded, not local hits.
  uint64_t n_gathered_pairs = 0;
  for (size_t j = n_local_jobs; j < n_jobs; ++j) n_gathered_pairs += jobs_[j].tokens.size();
  pinned_.clear();
  wait_for_calls(hidden);

  // Retries: failed pieces go to holders not tried yet, each round with a fresh deadline.
  for (int attempt = 1; attempt < options_.max_attempts; ++attempt) {
    pending.clear();
    for (size_t i = 0; i < pieces_.size(); ++i) {
      if (pieces_[i].state == Piece::State::kFailed) pending.push_back(i);
    }
    if (pending.empty()) break;
    dispatch(layer, x, n_tokens, hidden, *table, pending);
    wait_for_calls(hidden);
  }
  for (Piece& p : pieces_) {
    if (p.state == Piece::State::kFailed) p.state = Piece::State::kOffload;
  }

  // 4. Remote sums in ascending peer order (then call order), whatever the arrival order.
  std::vector<Call*> done;
  for (const auto& c : calls_) {
    if (c->state == Call::State::kDone) done.push_back(c.get());
  }
  std::stable_sort(done.begin(), done.end(),
                   [](const Call* a, const Call* b) { return a->peer < b->peer; });
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  for (const Call* c : done) {
    for (size_t r = 0; r < c->tokens.size(); ++r) {
      k.axpy(1.0f, c->result.data() + r * static_cast<size_t>(hidden),
             out + static_cast<int64_t>(c->tokens[r]) * hidden, hidden);
    }
  }

  uint64_t n_offloaded = n_gathered_pairs;
  Status offloaded = compute_offloaded(layer, x, n_tokens, hidden, *table, out, &n_offloaded);
  log_.record_layer(layer, routing, n_local_pairs, n_offloaded);
  return offloaded;
}

void DistributedMoeExecutor::record_device_compute(size_t n_jobs) {
  device_pairs_.assign(static_cast<size_t>(computer_.n_devices()), 0);
  for (size_t j = 0; j < n_jobs; ++j) {
    const size_t d = static_cast<size_t>(jobs_[j].device);
    if (d < device_pairs_.size()) device_pairs_[d] += jobs_[j].tokens.size();
  }
  const std::vector<double>& busy = computer_.last_device_us();
  for (size_t d = 0; d < device_pairs_.size(); ++d) {
    log_.record_device_compute(static_cast<int32_t>(d), device_pairs_[d], busy[d]);
  }
}

void DistributedMoeExecutor::dispatch(int64_t layer, const float* x, int64_t n_tokens,
                                      int64_t hidden, const HolderTable& table,
                                      const std::vector<size_t>& pieces) {
  const SteadyClock::time_point now = SteadyClock::now();
  const std::vector<PeerInfo>& peers = table.peers();
  std::vector<PeerCost> costs(peers.size());
  for (size_t p = 0; p < peers.size(); ++p) {
    PeerLink* link = peers_.find(peers[p].node_id);
    if (link == nullptr || link->endpoint() != peers[p].expert_endpoint) continue;
    const PeerEstimate& e = link->estimate();
    costs[p] = PeerCost{!e.in_backoff(now), e.overhead_us(), e.us_per_byte(), e.us_per_pair(),
                        e.in_flight};
  }
  std::vector<std::vector<int32_t>> holders(pieces.size());
  std::vector<ExpertDemand> demands;
  std::vector<size_t> demand_piece;
  for (size_t i = 0; i < pieces.size(); ++i) {
    Piece& piece = pieces_[pieces[i]];
    for (int32_t h : table.remote_holders(layer, piece.expert)) {
      if (std::find(piece.tried.begin(), piece.tried.end(), h) == piece.tried.end()) {
        holders[i].push_back(h);
      }
    }
    if (holders[i].empty() || static_cast<int>(piece.tried.size()) >= options_.max_attempts) {
      piece.state = Piece::State::kOffload;
      continue;
    }
    // Every holder left is in back-off after failing recently: with an
    // offload cache, compute here rather than wait out another deadline
    // (the peer is probed again once its back-off ends); without one, try
    // anyway -- it may be back.
    const bool all_backing_off = std::none_of(holders[i].begin(), holders[i].end(), [&](int32_t h) {
      return costs[static_cast<size_t>(h)].usable;
    });
    if (all_backing_off && offload_ != nullptr) {
      piece.state = Piece::State::kOffload;
      failures_.push_back("expert " + std::to_string(piece.expert) +
                          ": every holder is backing off after failures");
      continue;
    }
    demands.push_back({piece.expert, piece.tokens, holders[i]});
    demand_piece.push_back(pieces[i]);
  }
  const uint64_t bytes_per_token =
      2 * static_cast<uint64_t>(hidden) * dtype_size_bytes(options_.wire_dtype);
  const std::vector<int32_t> choice = choose_replicas(demands, costs, n_tokens, bytes_per_token);
  std::vector<std::vector<size_t>> by_peer(peers.size());
  for (size_t d = 0; d < demands.size(); ++d) {
    by_peer[static_cast<size_t>(choice[d])].push_back(demand_piece[d]);
  }
  if (first_dispatch_ && options_.weight_gathering && offload_ != nullptr &&
      offload_->can_fetch()) {
    choose_gathering(layer, n_tokens, bytes_per_token, table, &by_peer);
  }
  for (size_t p = 0; p < peers.size(); ++p) {
    if (by_peer[p].empty()) continue;
    // Pieces of one destination in ascending expert id: the peer sums in that order.
    std::sort(by_peer[p].begin(), by_peer[p].end(),
              [&](size_t a, size_t b) { return pieces_[a].expert < pieces_[b].expert; });
    // Split by tokens when the destination would get more than a call may carry.
    std::vector<int32_t> tokens;
    for (size_t i : by_peer[p]) {
      tokens.insert(tokens.end(), pieces_[i].tokens.begin(), pieces_[i].tokens.end());
    }
    std::sort(tokens.begin(), tokens.end());
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    if (tokens.size() <= options_.max_call_tokens) {
      send_call(layer, x, hidden, table, static_cast<int32_t>(p), by_peer[p]);
      continue;
    }
    for (size_t begin = 0; begin < tokens.size(); begin += options_.max_call_tokens) {
      const int32_t lo = tokens[begin];
      const int32_t hi = tokens[std::min(tokens.size(), begin + options_.max_call_tokens) - 1];
      std::vector<size_t> chunk;
      for (size_t i : by_peer[p]) {
        Piece part;
        part.expert = pieces_[i].expert;
        part.tried = pieces_[i].tried;
        for (size_t j = 0; j < pieces_[i].tokens.size(); ++j) {
          if (pieces_[i].tokens[j] >= lo && pieces_[i].tokens[j] <= hi) {
            part.tokens.push_back(pieces_[i].tokens[j]);
            part.weights.push_back(pieces_[i].weights[j]);
          }
        }
        if (!part.tokens.empty()) {
          pieces_.push_back(std::move(part));
          chunk.push_back(pieces_.size() - 1);
        }
      }
      send_call(layer, x, hidden, table, static_cast<int32_t>(p), std::move(chunk));
    }
    for (size_t i : by_peer[p]) pieces_[i].state = Piece::State::kSplit;
  }
}

void DistributedMoeExecutor::send_call(int64_t layer, const float* x, int64_t hidden,
                                       const HolderTable& table, int32_t peer,
                                       std::vector<size_t> pieces) {
  auto call = std::make_unique<Call>();
  call->call_id = next_call_id_++;
  call->sequence = ++sequence_;
  call->peer = peer;
  call->pieces = std::move(pieces);
  for (size_t i : call->pieces) {
    pieces_[i].state = Piece::State::kSent;
    pieces_[i].tried.push_back(peer);
  }
  // Rows of the call: the distinct tokens, ascending.
  for (size_t i : call->pieces) {
    call->tokens.insert(call->tokens.end(), pieces_[i].tokens.begin(), pieces_[i].tokens.end());
  }
  std::sort(call->tokens.begin(), call->tokens.end());
  call->tokens.erase(std::unique(call->tokens.begin(), call->tokens.end()), call->tokens.end());
  int32_t max_token = call->tokens.back();
  if (row_of_token_.size() <= static_cast<size_t>(max_token)) {
    row_of_token_.resize(static_cast<size_t>(max_token) + 1);
  }
  for (size_t r = 0; r < call->tokens.size(); ++r) {
    row_of_token_[static_cast<size_t>(call->tokens[r])] = static_cast<int32_t>(r);
  }
  proto::ExpertCall body;
  body.call_id = call->call_id;
  body.layer = static_cast<uint16_t>(layer);
  body.n_tokens = static_cast<uint32_t>(call->tokens.size());
  body.hidden = static_cast<uint32_t>(hidden);
  body.dtype = options_.wire_dtype;
  body.placement_version = table.version();
  for (size_t i : call->pieces) {
    const Piece& piece = pieces_[i];
    for (size_t j = 0; j < piece.tokens.size(); ++j) {
      body.assignments.push_back(
          {static_cast<uint32_t>(row_of_token_[static_cast<size_t>(piece.tokens[j])]),
           static_cast<uint16_t>(piece.expert), piece.weights[j]});
    }
  }
  call->n_pairs = body.assignments.size();
  staging_.resize(call->tokens.size() * static_cast<size_t>(hidden));
  for (size_t r = 0; r < call->tokens.size(); ++r) {
    std::copy_n(x + static_cast<int64_t>(call->tokens[r]) * hidden, hidden,
                staging_.data() + r * static_cast<size_t>(hidden));
  }
  std::vector<uint8_t> payload;
  encode_rows(staging_.data(), static_cast<int64_t>(call->tokens.size()), hidden,
              options_.wire_dtype, &payload);
  call->bytes = 2 * payload.size();
  proto::Envelope envelope;
  envelope.cluster_id = options_.cluster_id;
  envelope.sender = options_.node_id;
  envelope.sequence = call->sequence;
  envelope.body = std::move(body);

  call->sent_at = SteadyClock::now();
  call->deadline = call->sent_at + options_.call_timeout;
  Call& c = *call;
  calls_.push_back(std::move(call));
  Result<PeerLink*> link = peers_.link(table.peers()[static_cast<size_t>(peer)]);
  if (!link.is_ok()) {
    finish_call(c, link.status());
    return;
  }
  c.link = *link;
  Status sent = c.link->send(envelope, payload);
  if (!sent.is_ok()) {
    finish_call(c, sent);
    return;
  }
  ++c.link->estimate().in_flight;
}

void DistributedMoeExecutor::finish_call(Call& call, const Status& outcome) {
  const SteadyClock::time_point now = SteadyClock::now();
  const double rtt_us = micros(now - call.sent_at);
  if (call.link != nullptr && call.state == Call::State::kPending) {
    call.link->estimate().in_flight = std::max(0, call.link->estimate().in_flight - 1);
  }
  const std::string peer_id =
      call.link != nullptr ? call.link->node_id() : "peer#" + std::to_string(call.peer);
  if (outcome.is_ok()) {
    call.state = Call::State::kDone;
    for (size_t i : call.pieces) pieces_[i].state = Piece::State::kDone;
    call.link->estimate().on_success(rtt_us, call.bytes, call.n_pairs, call.compute_us);
    log_.record_remote_call(peer_id, rtt_us, call.bytes, true);
    return;
  }
  call.state = Call::State::kFailed;
  for (size_t i : call.pieces) pieces_[i].state = Piece::State::kFailed;
  if (call.link != nullptr) call.link->estimate().on_failure(now);
  log_.record_remote_call(peer_id, rtt_us, call.bytes / 2, false);
  failures_.push_back(peer_id + ": " + outcome.to_string());
}

void DistributedMoeExecutor::wait_for_calls(int64_t hidden) {
  while (true) {
    std::vector<Call*> open;
    for (const auto& c : calls_) {
      if (c->state == Call::State::kPending) open.push_back(c.get());
    }
    if (open.empty()) return;
    const SteadyClock::time_point now = SteadyClock::now();
    SteadyClock::time_point next_deadline = SteadyClock::time_point::max();
    for (Call* c : open) {
      if (now >= c->deadline) {
        finish_call(*c, deadline_exceeded("no answer within " +
                                          std::to_string(options_.call_timeout.count()) + " ms"));
      } else {
        next_deadline = std::min(next_deadline, c->deadline);
      }
    }
    std::vector<PeerLink*> links;
    for (Call* c : open) {
      if (c->state == Call::State::kPending &&
          std::find(links.begin(), links.end(), c->link) == links.end()) {
        links.push_back(c->link);
      }
    }
    if (links.empty()) continue;
    net::Poller poller;
    for (PeerLink* l : links) poller.add(l->socket());
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_deadline - now);
    Result<bool> ready = poller.wait(wait);
    if (!ready.is_ok() || !*ready) continue;  // timed out or interrupted: look again
    for (size_t i = 0; i < links.size(); ++i) {
      if (!poller.readable(i)) continue;
      while (std::optional<net::ReceivedMessage> m =
                 links[i]->receive(std::chrono::milliseconds(0))) {
        if (!m->envelope.is_ok()) continue;  // undecodable: nothing to match it with
        const proto::Envelope& e = *m->envelope;
        Call* match = nullptr;
        if (const auto* r = std::get_if<proto::ExpertResult>(&e.body)) {
          for (Call* c : open) {
            if (c->link == links[i] && c->call_id == r->call_id) match = c;
          }
          if (match == nullptr || match->state != Call::State::kPending) continue;  // late reply
          Status ok = Status::ok();
          if (r->n_tokens != match->tokens.size() || r->hidden != static_cast<uint32_t>(hidden)) {
            ok = invalid_argument("result of " + std::to_string(r->n_tokens) + " x " +
                                  std::to_string(r->hidden) + " for a call of " +
                                  std::to_string(match->tokens.size()) + " x " +
                                  std::to_string(hidden));
          } else if (r->dtype != DType::kF32 && r->dtype != DType::kBF16 &&
                     r->dtype != DType::kF16) {
            ok = invalid_argument("result dtype not supported");
          } else {
            match->result.resize(match->tokens.size() * static_cast<size_t>(hidden));
            ok = decode_rows(m->payload, r->dtype, static_cast<int64_t>(match->result.size()),
                             match->result.data());
            if (ok.is_ok()) ok = check_finite_rows(match->result, hidden);
          }
          match->compute_us = r->compute_us;
          finish_call(*match, ok);
        } else if (const auto* err = std::get_if<proto::Error>(&e.body)) {
          for (Call* c : open) {
            if (c->link == links[i] && c->sequence == err->in_reply_to) match = c;
          }
          if (match == nullptr || match->state != Call::State::kPending) continue;
          finish_call(*match, Status(err->code, err->message));
        }
      }
    }
  }
}

void DistributedMoeExecutor::choose_gathering(int64_t layer, int64_t n_tokens,
                                              uint64_t bytes_per_token, const HolderTable& table,
                                              std::vector<std::vector<size_t>>* by_peer) {
  const std::vector<PeerInfo>& peers = table.peers();
  GatherInputs in;
  in.n_tokens = n_tokens;
  in.bytes_per_token = bytes_per_token;
  in.cache_room_bytes = offload_->capacity_bytes();
  double remote_per_pair = 0.0;
  int n_remote = 0;
  for (size_t p = 0; p < peers.size(); ++p) {
    GatherPeer g;
    PeerLink* link = peers_.find(peers[p].node_id);
    if (link != nullptr && link->endpoint() == peers[p].expert_endpoint) {
      const PeerEstimate& e = link->estimate();
      g.measured = e.bandwidth_samples() > 0;
      g.overhead_us = e.overhead_us();
      g.us_per_byte = e.us_per_byte();
      g.remote_us_per_pair = e.us_per_pair();
      if (g.measured) {
        remote_per_pair += g.remote_us_per_pair;
        ++n_remote;
      }
    }
    in.peers.push_back(g);
  }
  // Until this node has computed experts itself, take the peers' pace.
  in.local_us_per_pair = local_us_per_pair_ > 0.0 ? local_us_per_pair_
                         : n_remote > 0           ? remote_per_pair / n_remote
                                                  : 0.0;
  std::vector<size_t> piece_of;
  for (size_t p = 0; p < by_peer->size(); ++p) {
    for (size_t i : (*by_peer)[p]) {
      const Piece& piece = pieces_[i];
      const ExpertRef key{static_cast<int32_t>(layer), piece.expert};
      in.candidates.push_back({piece.expert, static_cast<int32_t>(p), piece.tokens,
                               offload_->expert_bytes(key), offload_->contains(key)});
      piece_of.push_back(i);
    }
  }
  if (in.candidates.empty()) return;
  const GatherChoice choice = plan_gathering(in);
  for (size_t c = 0; c < in.candidates.size(); ++c) {
    if (!choice.gather[c]) continue;
    Piece& piece = pieces_[piece_of[c]];
    piece.state = Piece::State::kGather;
    piece.gather_peer = in.candidates[c].peer;
    std::vector<size_t>& list = (*by_peer)[static_cast<size_t>(piece.gather_peer)];
    list.erase(std::find(list.begin(), list.end(), piece_of[c]));
  }
  gathering_.activation_bytes_avoided.fetch_add(choice.activation_bytes_avoided,
                                                std::memory_order_relaxed);
  if (choice.weight_bytes > 0) {
    spdlog::debug(
        "weight gathering: layer {}: fetch {:.2f} MB instead of sending {:.2f} MB of "
        "hidden states (estimated saving {:.1f} ms)",
        layer, choice.weight_bytes / 1e6, choice.activation_bytes_avoided / 1e6,
        choice.estimated_saving_us / 1e3);
  }
}

size_t DistributedMoeExecutor::gather(int64_t layer, const HolderTable& table, size_t n_jobs) {
  uint64_t fetched = 0, cached = 0, bytes = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  for (Piece& piece : pieces_) {
    if (piece.state != Piece::State::kGather) continue;
    const ExpertRef key{static_cast<int32_t>(layer), piece.expert};
    const bool was_cached = offload_->contains(key);
    // The holder the call would have gone to, then the others.
    std::vector<PeerInfo> sources = {table.peers()[static_cast<size_t>(piece.gather_peer)]};
    for (int32_t h : table.remote_holders(layer, piece.expert)) {
      if (h != piece.gather_peer) sources.push_back(table.peers()[static_cast<size_t>(h)]);
    }
    Result<std::shared_ptr<const ExpertWeights>> w = offload_->get_or_load(key, sources);
    if (!w.is_ok()) {
      spdlog::warn("weight gathering: layer {} expert {}: {}; sending its tokens instead", layer,
                   piece.expert, w.status().message());
      gathering_.fetch_failures.fetch_add(1, std::memory_order_relaxed);
      piece.state = Piece::State::kPending;
      continue;
    }
    if (was_cached) {
      ++cached;
    } else {
      ++fetched;
      bytes += (*w)->n_bytes;
    }
    if (jobs_.size() <= n_jobs) jobs_.emplace_back();
    ExpertJob& job = jobs_[n_jobs++];
    assign_expert(**w, &job);
    job.tokens = piece.tokens;
    job.weights = piece.weights;
    pinned_.push_back(std::move(w).value());
    piece.state = Piece::State::kGathered;
  }
  if (fetched + cached == 0) return n_jobs;
  const double us = micros(SteadyClock::now() - start);
  gathering_.experts_fetched.fetch_add(fetched, std::memory_order_relaxed);
  gathering_.experts_cached.fetch_add(cached, std::memory_order_relaxed);
  gathering_.weight_bytes.fetch_add(bytes, std::memory_order_relaxed);
  gathering_.fetch_us.fetch_add(static_cast<uint64_t>(us), std::memory_order_relaxed);
  if (fetched > 0) {
    spdlog::info(
        "weight gathering: layer {}: {} expert(s) fetched ({:.2f} MB in {:.1f} ms), {} "
        "from the offload cache, computed here instead of sending their tokens",
        layer, fetched, bytes / 1e6, us / 1e3, cached);
  }
  return n_jobs;
}

Status DistributedMoeExecutor::compute_offloaded(int64_t layer, const float* x, int64_t n_tokens,
                                                 int64_t hidden, const HolderTable& table,
                                                 float* out, uint64_t* n_pairs) {
  size_t n_jobs = 0;
  pinned_.clear();
  for (const Piece& piece : pieces_) {
    if (piece.state != Piece::State::kOffload) continue;
    const ExpertRef key{static_cast<int32_t>(layer), piece.expert};
    Status why = unavailable("no offload cache (--offload-cache 0)");
    std::shared_ptr<const ExpertWeights> w;
    if (offload_ != nullptr) {
      std::vector<PeerInfo> sources;
      for (int32_t h : table.remote_holders(layer, piece.expert)) {
        sources.push_back(table.peers()[static_cast<size_t>(h)]);
      }
      Result<std::shared_ptr<const ExpertWeights>> loaded = offload_->get_or_load(key, sources);
      if (loaded.is_ok()) {
        w = *loaded;
      } else {
        why = loaded.status();
      }
    }
    if (w == nullptr) {
      pinned_.clear();
      std::string tried;
      for (const std::string& f : failures_) tried += (tried.empty() ? "" : "; ") + f;
      return unavailable(
          "expert " + std::to_string(piece.expert) + " of layer " + std::to_string(layer) +
          " could not be computed: " + (tried.empty() ? std::string("no peer answered") : tried) +
          "; offload: " + why.message());
    }
    if (jobs_.size() <= n_jobs) jobs_.emplace_back();
    ExpertJob& job = jobs_[n_jobs++];
    assign_expert(*w, &job);
    job.tokens = piece.tokens;
    job.weights = piece.weights;
    *n_pairs += piece.tokens.size();
    pinned_.push_back(std::move(w));
  }
  if (n_jobs > 0) {
    computer_.run(std::span<const ExpertJob>(jobs_.data(), n_jobs), x, n_tokens, hidden, out);
  }
  pinned_.clear();
  return Status::ok();
}

}  // namespace dancemoe::node
