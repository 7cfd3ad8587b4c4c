// DistributedMoeExecutor: a MoE layer computed across the cluster
// (DESIGN.md §3). For each layer it
//
//   1. splits the routed (token, expert) pairs into experts this node holds
//      (HolderTable + ExpertStore) and remote ones;
//   2. chooses one holder per remote expert (replica_chooser.h) and sends
//      ONE ExpertCall per destination -- before any local compute;
//   3. computes the local experts into the residual stream meanwhile, each
//      on the device that holds it, devices concurrently (ExpertComputer)
//      (overlap; `overlap = false` waits for the peers first, for the
//      benchmark that shows what overlap buys) -- with weight gathering
//      (weight_gathering.h), the remote experts whose weights cost less to
//      fetch than their tokens to send are fetched into the offload cache
//      first (or found there) and computed here with the local ones;
//   4. collects the peers' per-token gate-weighted sums and adds them, in
//      ascending peer (node id) order, whatever order they arrived in.
//
// Failures (DESIGN.md §8): every call has a deadline; an expert whose call
// timed out, got an Error or a result holding NaN or Inf (never added: a
// peer's garbage must not reach an answer) is retried on another holder (fresh deadline),
// up to `max_attempts` holders; then it is loaded from the local model files
// into the offload cache and computed here; if even that fails, run_layer
// returns unavailable naming the layer, the expert and what was tried --
// the request fails, the node keeps serving. A layer never waits longer
// than max_attempts x call_timeout plus the offload load.
//
// Order of the sum, and why f32 clusters match one node: out[t] receives
// the local experts in ascending id (ExpertComputer), then each peer's sum
// (its experts in ascending id, starting from zero), then offloaded ones.
// With every expert local this is exactly LocalMoeExecutor; otherwise it
// differs from it only by float re-association (~1 ulp per add).
//
// Not thread-safe: one forward at a time (every forward of the node runs on
// its batch scheduler's thread, one step over all sequences at a time).
// Owns no sockets itself; the PeerPool's links belong to this thread too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/inference/expert_compute.h"
#include "common/inference/expert_store.h"
#include "common/inference/moe_executor.h"
#include "common/model/model_config.h"
#include "common/tensor/dtype.h"
#include "edge_node/activation/activation_log.h"
#include "edge_node/holders/holder_table.h"
#include "edge_node/remote/offload_cache.h"
#include "edge_node/remote/peer_pool.h"
#include "edge_node/trace/routing_replay.h"

namespace dancemoe::node {

struct DistributedExecutorOptions {
  std::string node_id;
  std::string cluster_id;
  DType wire_dtype = DType::kBF16;  // kF32 or kBF16
  std::chrono::milliseconds call_timeout{1000};
  int max_attempts = 2;  // holders tried per expert before offloading
  bool overlap = true;
  uint32_t max_call_tokens = 4096;  // larger sets are split into several calls
  // Fetch remote experts' weights into the offload cache when that costs
  // less than sending the tokens (needs an offload cache that can fetch).
  bool weight_gathering = true;
};

// Weight gathering so far (relaxed atomics: /metrics reads them).
struct GatheringCounters {
  std::atomic<uint64_t> experts_fetched{0};  // weights fetched instead of a call
  std::atomic<uint64_t> experts_cached{0};   // computed from the offload cache instead of a call
  std::atomic<uint64_t> weight_bytes{0};     // fetched
  std::atomic<uint64_t> activation_bytes_avoided{0};  // hidden states not sent (both ways)
  std::atomic<uint64_t> fetch_us{0};                  // time spent fetching
  std::atomic<uint64_t> fetch_failures{0};            // fetches that failed (the tokens were sent)
};

class DistributedMoeExecutor final : public MoeExecutor {
 public:
  // `offload` may be null (no offload cache). Everything must outlive this.
  DistributedMoeExecutor(const ModelConfig& config, const ExpertStore& store,
                         ExpertComputer& computer, const HolderTableHandle& table, PeerPool& peers,
                         OffloadCache* offload, ActivationLog& log,
                         DistributedExecutorOptions options);
  ~DistributedMoeExecutor() override;

  Status run_layer(int64_t layer, const float* x, int64_t n_tokens, int64_t hidden,
                   const RoutingDecision& routing, float* out) override;

  const DistributedExecutorOptions& options() const { return options_; }
  const GatheringCounters& gathering() const { return gathering_; }

  // Replaces the router's expert choices by a recorded trace's (benchmarks;
  // routing_replay.h). `replay` must outlive this; null turns it off.
  void set_routing_replay(RoutingReplay* replay) { replay_ = replay; }

 private:
  // One expert's share of a layer that is not computed here: the tokens
  // routed to it and their gate weights, and the peers that already failed it.
  struct Piece {
    int32_t expert = 0;
    std::vector<int32_t> tokens;
    std::vector<float> weights;
    std::vector<int32_t> tried;  // peer indices
    enum class State {
      kPending,
      kSent,
      kDone,
      kFailed,
      kOffload,
      kSplit,
      kGather,    // weights to fetch (or in the cache): computed here with the local experts
      kGathered,  // computed here already
    } state = State::kPending;
    int32_t gather_peer = -1;  // with kGather: the holder to fetch from first
  };
  struct Call;

  // Chooses holders for the pending pieces and sends one call per destination.
  void dispatch(int64_t layer, const float* x, int64_t n_tokens, int64_t hidden,
                const HolderTable& table, const std::vector<size_t>& pieces);
  // With weight gathering, on the first dispatch of a layer: marks the
  // pieces worth gathering (kGather) and takes them out of `by_peer`.
  void choose_gathering(int64_t layer, int64_t n_tokens, uint64_t bytes_per_token,
                        const HolderTable& table, std::vector<std::vector<size_t>>* by_peer);
  // Fetches (or finds) the kGather pieces' weights and appends them as jobs
  // from `n_jobs` on; a piece whose fetch fails goes back to kPending.
  size_t gather(int64_t layer, const HolderTable& table, size_t n_jobs);
  void send_call(int64_t layer, const float* x, int64_t hidden, const HolderTable& table,
                 int32_t peer, std::vector<size_t> pieces);
  void wait_for_calls(int64_t hidden);
  void finish_call(Call& call, const Status& outcome);
  // Per device of the computer: the pairs of the last local run and its time.
  void record_device_compute(size_t n_jobs);
  // The kOffload pieces, from the offload cache: this node's files, else
  // the expert's weights fetched from its holders in `table` (a partial
  // checkpoint lacks the files; a holder too slow to answer a call in time
  // may still send its weights).
  Status compute_offloaded(int64_t layer, const float* x, int64_t n_tokens, int64_t hidden,
                           const HolderTable& table, float* out, uint64_t* n_pairs);

  const ModelConfig& config_;
  const ExpertStore& store_;
  ExpertComputer& computer_;
  const HolderTableHandle& table_;
  PeerPool& peers_;
  OffloadCache* offload_;
  ActivationLog& log_;
  DistributedExecutorOptions options_;
  GatheringCounters gathering_;
  double local_us_per_pair_ = 0.0;  // measured, EWMA; 0: not yet
  bool first_dispatch_ = false;     // the next dispatch is the layer's first
  RoutingReplay* replay_ = nullptr;
  uint64_t next_call_id_ = 1;
  uint64_t sequence_ = 0;

  // Per-layer scratch, reused.
  std::vector<ExpertJob> by_expert_;   // [n_experts]: tokens and weights routed to each
  std::vector<uint8_t> expert_local_;  // [n_experts]: computed here in this layer
  std::vector<ExpertJob> jobs_;
  std::vector<std::shared_ptr<const ExpertWeights>> pinned_;
  std::vector<Piece> pieces_;
  std::vector<std::unique_ptr<Call>> calls_;
  std::vector<std::string> failures_;  // "peer: reason", for the error message
  std::vector<int32_t> row_of_token_;  // [n_tokens]: row in the call being built
  std::vector<float> staging_;         // gathered rows of one call
  std::vector<uint64_t> device_pairs_;
};

}  // namespace dancemoe::node
