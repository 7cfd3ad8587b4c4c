// PromptRunner: one node's prompt execution -- the Transformer (whose MoE layers
// run on the DistributedMoeExecutor), the tokenizer, one KV cache, and the
// per-request accounting the HTTP API returns (where each activation was
// served, remote calls, timings) and the trace recorder's request context.
//
// Concurrency: one generation at a time per node (single stream, one KV
// cache). generate() takes a mutex; the HTTP API puts a FIFO RequestQueue
// (edge_node/http/request_queue.h) in front of it so waiting is fair,
// bounded and cancellable.
// in_flight() counts running plus waiting requests (the migration throttle
// and heartbeats read it). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/generation/generator.h"
#include "common/inference/kv_cache.h"
#include "common/inference/transformer.h"
#include "common/tokenizer/tokenizer.h"
#include "edge_node/activation/activation_log.h"
#include "edge_node/migration/load_throttle.h"
#include "edge_node/trace/routing_replay.h"
#include "edge_node/trace/trace_writer.h"

namespace dancemoe::node {

struct GenerateRequest {
  std::string prompt;                                 // encoded with special tokens
  std::optional<std::vector<int32_t>> prompt_tokens;  // instead of `prompt`
  int32_t max_tokens = 64;
  SamplingParams sampling;  // temperature 0: greedy
  bool ignore_eos = false;
  std::vector<std::string> stop;
  bool return_logits = false;              // the logits row of every generated token
  int32_t n_logprobs = -1;                 // generator.h: -1 none, n >= 0 with n alternatives
  std::shared_ptr<const Grammar> grammar;  // response_format; nullptr: free text
  bool skip_special_tokens = true;         // false: the text keeps them (GenerationParams)
  // Streaming: receives the text as it becomes final (not with
  // return_logits); returning false cancels. May be empty.
  TextSink on_text;
  // Polled after every token; true stops the generation early with
  // finish_reason "cancelled" (the HTTP client went away). May be empty.
  std::function<bool()> cancelled;
};

struct GenerateResponse {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;  // per token, when asked for
  int64_t prompt_tokens = 0;
  std::string finish_reason;
  ServedCounts served;  // this request only
  double prefill_ms = 0;
  double decode_ms = 0;
  // Wall time of each decode forward, ms: from its first MoE layer to the
  // next forward's (the last one to the end of the request) -- the per-token
  // latency a user sees, sampling included.
  std::vector<double> step_ms;
  std::vector<std::vector<float>> logits;  // [generated token][vocab] when asked for
};

class PromptRunner {
 public:
  struct Parts {
    Transformer* transformer = nullptr;
    const tokenizer::Tokenizer* tokenizer = nullptr;  // may be null: prompt_tokens only
    ActivationLog* log = nullptr;
    TraceWriter* trace = nullptr;             // may be null
    RoutingReplay* replay = nullptr;          // may be null (--replay-routing)
    LoadThrottle* throttle = nullptr;         // may be null
    std::function<bool()> migration_loading;  // may be empty
    int64_t context_tokens = 4096;
  };

  static Result<std::unique_ptr<PromptRunner>> create(Parts parts);

  Result<GenerateResponse> generate(const GenerateRequest& request);

  uint32_t in_flight() const { return in_flight_.load(); }

 private:
  explicit PromptRunner(Parts parts) : parts_(parts) {}
  void on_routing(int64_t layer, const RoutingDecision& routing);
  Result<GenerateResponse> run_token_loop(std::span<const int32_t> prompt,
                                          const GenerateRequest& request);
  bool is_eos(int32_t id) const;

  Parts parts_;
  std::mutex mutex_;
  std::atomic<uint32_t> in_flight_{0};
  std::optional<KvCache> cache_;
  std::vector<int32_t> eos_ids_;
  // Built on the first request with a response_format, then shared.
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  int64_t first_moe_layer_ = -1;
  int64_t request_id_ = 0;
  // Per decode step latency for the migration throttle: time between
  // successive single-token forwards reaching the first MoE layer.
  std::chrono::steady_clock::time_point last_step_{};
  bool last_step_valid_ = false;
  // When each forward of the current request reached its first MoE layer.
  std::vector<std::chrono::steady_clock::time_point> forward_starts_;
};

}  // namespace dancemoe::node
