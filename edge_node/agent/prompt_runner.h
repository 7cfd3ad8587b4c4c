// PromptRunner: one node's prompt execution -- the Transformer (whose MoE layers
// run on the DistributedMoeExecutor), the tokenizer, the BatchScheduler that
// runs every request's sequence in one continuous batch (batch_scheduler.h),
// and the per-request accounting the HTTP API returns (where each activation
// was served, remote calls, timings) and the trace recorder's request context.
//
// Concurrency: generate() may be called by many threads at once; up to
// batch.max_sequences sequences run together. With a trace recorder or a
// routing replay (both per request) generations run one at a time instead.
// The HTTP API puts a FIFO RequestQueue (edge_node/http/request_queue.h) in
// front of it so waiting is fair, bounded and cancellable. The served counts
// of a response are the node's during the request: with several requests
// running together they include the others' activations.
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
#include "edge_node/agent/batch_scheduler.h"
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
  std::string grammar_field = "response_format";  // what asked for it, for errors
  bool skip_special_tokens = true;                // false: the text keeps them (GenerationParams)
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
  int64_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  ServedCounts served;        // the node's during this request
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
    BatchOptions batch;  // context_tokens is set from the above
  };

  static Result<std::unique_ptr<PromptRunner>> create(Parts parts);

  Result<GenerateResponse> generate(const GenerateRequest& request);

  uint32_t in_flight() const { return in_flight_.load(); }
  // Sequences that may run together (1 with a trace or a replay).
  int32_t max_sequences() const { return scheduler_->options().max_sequences; }
  BatchScheduler::Stats batch_stats() const { return scheduler_->stats(); }

 private:
  explicit PromptRunner(Parts parts) : parts_(parts) {}
  void on_routing(int64_t layer, const RoutingDecision& routing);
  void on_step(const StepInfo& step);
  Result<GenerateResponse> run(std::vector<int32_t> prompt, const GenerateRequest& request);

  Parts parts_;
  bool exclusive_ = false;  // a trace or a replay: one request at a time
  std::mutex exclusive_mutex_;
  std::mutex vocabulary_mutex_;
  std::atomic<uint32_t> in_flight_{0};
  std::vector<int32_t> eos_ids_;
  // Built on the first request with a response_format, then shared.
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  int64_t first_moe_layer_ = -1;
  std::unique_ptr<BatchScheduler> scheduler_;
  // Scheduler thread only (the observers run there).
  int64_t request_id_ = 0;  // exclusive mode's current request
  int64_t step_position_ = 0;
  bool step_decode_only_ = false;
  // Per decode step latency for the migration throttle: time between
  // successive decode-only steps reaching the first MoE layer.
  std::chrono::steady_clock::time_point last_step_{};
  bool last_step_valid_ = false;
};

}  // namespace dancemoe::node
