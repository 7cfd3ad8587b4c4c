// BatchScheduler: the node's continuous batching. Every request's sequence
// runs on one scheduler thread that steps all active sequences together: each
// step is one Transformer::forward_batch over every decoding sequence's next
// token plus chunks of the prompts being prefilled (at most
// prefill_chunk_tokens prompt tokens per step, so running streams keep
// flowing while a long prompt comes in). Attention is per sequence; routing
// and experts run over all rows of the step, so each expert's weights are
// read once per step and a distributed executor sends one ExpertCall per
// destination per layer per step for all sequences.
//
// Prompts that finish within one chunk are stepped first, in a step of their
// own, when sequences are decoding: a new request's first token then waits
// for one short step, not for a step of every running stream; the next step
// always includes the decoders. Such prompts arriving during a step need not
// wait for the end of a step of decoders either: where the backend can
// pause a batch between layers (ForwardEngine::can_suspend, the CPU
// engine), the first layer boundary after they come runs them to their
// first token in a step of their own (Transformer::set_layer_hook), once per
// step, and the paused step then goes on; they decode with the others from
// the next step. (Never into a step of prompts: that would put a later
// prompt's first token before an earlier one's.)
//
// KV memory is accounted in blocks of block_tokens positions: a sequence
// reserves the blocks of its prompt + max_tokens when admitted (a reservation,
// not paging: each sequence keeps one contiguous KvCache whose pages become
// resident as they are written). Admission is FIFO and waits while the
// budget or the max_sequences slots are full; a request that needs more than
// the whole budget is refused with a clear error. A cancelled sequence (its
// client went away) is dropped at the next step boundary and its cache freed
// before run() returns. Finished sequences' KV goes to the PrefixCache
// (common/inference/prefix_cache.h), and admission restores the longest
// cached prefix of a new prompt.
//
// A backend that cannot batch sequences (the CUDA engine) still runs here:
// forward_batch then runs the step's sequences one after another.
//
// Thread-safe: run() is called by many request threads at once; sampling and
// detokenization happen on the scheduler thread, the text sink on the
// caller's. The transformer must outlive the scheduler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/base/status.h"
#include "common/generation/generator.h"
#include "common/generation/sequence_decoder.h"
#include "common/inference/prefix_cache.h"
#include "common/inference/transformer.h"
#include "common/tokenizer/tokenizer.h"

namespace dancemoe::node {

struct BatchOptions {
  int32_t max_sequences = 16;          // active together (--max-batch)
  int64_t block_tokens = 16;           // positions per KV block
  int64_t kv_budget_blocks = 0;        // 0: max_sequences full contexts
  int64_t prefill_chunk_tokens = 256;  // prompt tokens per step, over all sequences
  int64_t context_tokens = 4096;       // longest sequence
  int64_t prefix_cache_bytes = 0;      // 0: no prefix cache
  // A stream's text goes to its caller every stream_interval steps (every
  // stream_interval pieces of text; the first and the end at once): each
  // handover wakes the caller's thread and, over HTTP, its client, which on
  // a small node take the cores from the forward (--stream-interval).
  int32_t stream_interval = 1;
};

// One sequence to generate.
struct SequenceJob {
  std::vector<int32_t> prompt;
  GenerationParams params;   // params.cancelled is not used: see `cancelled`
  bool keep_logits = false;  // every step's logits row (SequenceDecoder)
  std::shared_ptr<const TokenVocabulary> vocabulary;  // with a grammar; may be null
  TextSink on_text;                 // called on run()'s thread; false cancels. May be empty.
  std::function<bool()> cancelled;  // polled by run()'s thread. May be empty.
};

struct SequenceOutcome {
  GenerationResult result;
  std::vector<std::vector<float>> logits;  // with keep_logits
  std::vector<double> step_ms;             // wall time between this sequence's decode steps
  int64_t cached_tokens = 0;               // prompt positions restored from the prefix cache
  int64_t deliveries = 0;                  // times text was handed to on_text (a stream's chunks)
};

// What a step runs, for the owner's observers (before the forward).
struct StepInfo {
  int64_t n_sequences = 0;
  int64_t n_tokens = 0;
  bool decode_only = false;    // every sequence brings one generated token
  int64_t first_position = 0;  // the first sequence's first position
  // Run between two layers of another step (new prompts): that step's
  // forward resumes after this one's.
  bool between_layers = false;
};

class BatchScheduler {
 public:
  struct Parts {
    Transformer* transformer = nullptr;
    const tokenizer::Tokenizer* tokenizer = nullptr;  // may be null: tokens only
    std::vector<int32_t> eos_ids;
    std::function<void(const StepInfo&)> on_step;  // scheduler thread; may be empty
  };
  struct Stats {
    int64_t active = 0;
    int64_t waiting = 0;
    int64_t blocks_used = 0;
    int64_t blocks_total = 0;
    int64_t block_tokens = 0;
    int64_t max_sequences = 0;
    uint64_t steps = 0;
    uint64_t step_tokens = 0;
    uint64_t step_sequences = 0;
    uint64_t interjections = 0;  // of those steps, run between two layers of another
    PrefixCache::Stats prefix;
  };

  static Result<std::unique_ptr<BatchScheduler>> create(Parts parts, BatchOptions options);
  ~BatchScheduler();

  // Generates one sequence, blocking the calling thread until it ends;
  // streams its text to job.on_text on this thread.
  Result<SequenceOutcome> run(SequenceJob job);

  Stats stats() const;
  const BatchOptions& options() const { return options_; }

 private:
  struct Delta {
    std::string text;
    std::vector<TokenLogprobs> logprobs;
  };
  struct Sequence;
  using Clock = std::chrono::steady_clock;

  BatchScheduler(Parts parts, BatchOptions options);
  void loop();
  // Under the lock: drops cancelled sequences, admits waiting ones.
  void sweep_and_admit_locked();
  // Scheduler thread, without the lock: one forward over every active sequence.
  void step();
  // The transformer's layer hook, inside a step: admits waiting prompts that
  // one chunk finishes and runs them to their first token there, once a
  // step (see the header comment).
  void interject();
  // A cache for each sequence that has none, with its prompt's cached prefix.
  void open_caches(const std::vector<std::shared_ptr<Sequence>>& sequences);
  // After a forward of `batch` (the rows of `stepped`): samples, publishes
  // text, ends finished sequences.
  void finish_step(const Status& status, const std::vector<SequenceStep>& batch,
                   const std::vector<Sequence*>& stepped, std::vector<float>& logits);
  static StepInfo step_info(const std::vector<SequenceStep>& batch, bool decode_only);
  // Ends a sequence (under the lock): frees its blocks and cache.
  void release_locked(Sequence& seq);

  Parts parts_;
  const BatchOptions options_;
  std::unique_ptr<PrefixCache> prefix_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // the scheduler waits for work (callers: Sequence::ready)
  std::deque<std::shared_ptr<Sequence>> waiting_;
  std::atomic<size_t> waiting_count_{0};  // waiting_.size(), for the layer hook's glance
  std::vector<std::shared_ptr<Sequence>> active_;
  int64_t blocks_used_ = 0;
  bool stopping_ = false;
  uint64_t steps_ = 0;
  uint64_t step_tokens_ = 0;
  uint64_t step_sequences_ = 0;
  uint64_t interjections_ = 0;
  // Scheduler thread only.
  std::vector<SequenceStep> batch_;
  std::vector<Sequence*> stepped_;
  std::vector<float> logits_;
  std::vector<char> finish_cancelled_;  // finish_step's snapshot of `cancel`
  bool last_step_prompts_only_ = false;
  bool interjected_ = false;       // this step ran prompts between its layers
  bool step_decode_only_ = false;  // this step runs decoders only
  std::vector<std::shared_ptr<Sequence>> fresh_;
  std::vector<SequenceStep> nested_batch_;
  std::vector<Sequence*> nested_stepped_;
  std::vector<float> nested_logits_;
  std::thread thread_;
};

}  // namespace dancemoe::node
