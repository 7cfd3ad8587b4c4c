#include "edge_node/agent/batch_scheduler.h"

#include <algorithm>
#include <string>

namespace dancemoe::node {

// A sequence's state. `job`, `blocks` and `decoder` (until admitted) are set
// by run(); the scheduler thread alone touches the rest of the first group;
// the second group is shared under the scheduler's mutex.
struct BatchScheduler::Sequence {
  SequenceJob job;
  int64_t blocks = 0;
  std::unique_ptr<SequenceDecoder> decoder;
  // Scheduler thread.
  std::optional<KvCache> cache;
  int64_t prefilled = 0;  // prompt positions in the cache
  int32_t fed = 0;        // the token a decode step runs
  bool decoding = false;
  Clock::time_point last_step{};
  Clock::time_point prefill_start{};
  Clock::time_point decode_start{};
  std::vector<Delta> pending;  // text of this step, published under the lock
  SequenceOutcome outcome;
  // Under the mutex.
  bool admitted = false;
  bool cancel = false;
  bool done = false;
  bool flush = false;      // the caller should take the outbox now
  bool delivered = false;  // the first text was handed over
  int64_t deliveries = 0;  // by run(): outboxes taken with text
  Status error = Status::ok();
  std::deque<Delta> outbox;
  // The caller waits here, woken only for its own text (one condition for
  // every caller woke all of them, and the scheduler, at every step).
  std::condition_variable ready;
};

namespace {

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t blocks_for(int64_t tokens, int64_t block) { return (tokens + block - 1) / block; }

}  // namespace

Result<std::unique_ptr<BatchScheduler>> BatchScheduler::create(Parts parts, BatchOptions options) {
  if (parts.transformer == nullptr) return internal_error("BatchScheduler needs a transformer");
  if (options.max_sequences < 1) return invalid_argument("--max-batch: must be at least 1");
  if (options.block_tokens < 1) return invalid_argument("KV block size must be at least 1");
  if (options.prefill_chunk_tokens < 1) {
    return invalid_argument("--prefill-chunk: must be at least 1 token");
  }
  if (options.stream_interval < 1) return invalid_argument("--stream-interval: must be at least 1");
  if (options.kv_budget_blocks <= 0) {
    options.kv_budget_blocks =
        options.max_sequences * blocks_for(options.context_tokens, options.block_tokens);
  }
  std::unique_ptr<BatchScheduler> s(new BatchScheduler(std::move(parts), options));
  s->thread_ = std::thread([raw = s.get()] { raw->loop(); });
  return s;
}

BatchScheduler::BatchScheduler(Parts parts, BatchOptions options)
    : parts_(std::move(parts)), options_(options) {
  Transformer* tf = parts_.transformer;
  prefix_ =
      std::make_unique<PrefixCache>(options_.prefix_cache_bytes, options_.block_tokens,
                                    [tf](int64_t capacity) { return tf->new_cache(capacity); });
  tf->set_layer_hook([this] { interject(); });
}

BatchScheduler::~BatchScheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  parts_.transformer->set_layer_hook(nullptr);
}

Result<SequenceOutcome> BatchScheduler::run(SequenceJob job) {
  const int64_t prompt_len = static_cast<int64_t>(job.prompt.size());
  const int64_t needed = prompt_len + job.params.max_tokens;
  if (needed > options_.context_tokens) {
    return invalid_argument("prompt (" + std::to_string(prompt_len) + " tokens) + max_tokens (" +
                            std::to_string(job.params.max_tokens) + ") exceed the context of " +
                            std::to_string(options_.context_tokens) + " tokens (--context)");
  }
  const int64_t blocks = blocks_for(needed, options_.block_tokens);
  if (blocks > options_.kv_budget_blocks) {
    return invalid_argument("prompt + max_tokens need " + std::to_string(blocks) +
                            " KV blocks of " + std::to_string(options_.block_tokens) +
                            " tokens, more than the node's whole KV budget of " +
                            std::to_string(options_.kv_budget_blocks) + " (--kv-memory)");
  }
  GenerationParams params = job.params;
  params.cancelled = nullptr;  // polled here, not on the scheduler thread
  DMOE_ASSIGN_OR_RETURN(
      std::unique_ptr<SequenceDecoder> decoder,
      SequenceDecoder::create(params, job.prompt, parts_.tokenizer, parts_.eos_ids, job.vocabulary,
                              parts_.transformer->config().vocab_size, job.keep_logits));
  auto seq = std::make_shared<Sequence>();
  seq->job = std::move(job);
  seq->blocks = blocks;
  seq->decoder = std::move(decoder);

  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_) return unavailable("the node is shutting down");
  waiting_.push_back(seq);
  waiting_count_.store(waiting_.size(), std::memory_order_relaxed);
  changed_.notify_all();
  bool cancel_sent = false;
  std::vector<Delta> deltas;
  while (true) {
    // Woken for text or the end; every 20 ms also to poll `cancelled`,
    // leaving the text that is not due yet.
    seq->ready.wait_for(lock, std::chrono::milliseconds(20),
                        [&] { return seq->done || seq->flush; });
    deltas.clear();
    if ((seq->flush || seq->done) && !seq->outbox.empty()) {
      deltas.assign(std::make_move_iterator(seq->outbox.begin()),
                    std::make_move_iterator(seq->outbox.end()));
      seq->outbox.clear();
      ++seq->deliveries;
    }
    seq->flush = false;
    const bool done = seq->done;
    lock.unlock();
    bool cancel = false;
    for (const Delta& d : deltas) {
      if (cancel_sent || cancel) break;
      if (seq->job.on_text && !seq->job.on_text(TextDelta{d.text, d.logprobs})) cancel = true;
    }
    if (!done && !cancel && !cancel_sent && seq->job.cancelled && seq->job.cancelled()) {
      cancel = true;
    }
    lock.lock();
    if (cancel && !cancel_sent) {
      cancel_sent = true;
      seq->cancel = true;
      changed_.notify_all();
    }
    if (done && seq->outbox.empty()) break;
  }
  // Woken by release_locked inside a step, this thread can get here before
  // the scheduler's next sweep: the sequence leaves the active ones now, so
  // that no one sees a returned request as running (stats(), /metrics).
  std::erase(active_, seq);
  if (!seq->error.is_ok()) return seq->error;
  SequenceOutcome outcome = std::move(seq->outcome);
  outcome.deliveries = seq->deliveries;
  if (cancel_sent) outcome.result.finish = FinishReason::kCancelled;
  return outcome;
}

void BatchScheduler::release_locked(Sequence& seq) {
  if (seq.admitted) blocks_used_ -= seq.blocks;
  seq.admitted = false;
  seq.cache.reset();
  seq.done = true;
  seq.ready.notify_one();
}

void BatchScheduler::sweep_and_admit_locked() {
  for (auto it = active_.begin(); it != active_.end();) {
    if ((*it)->cancel || (*it)->done) {
      if (!(*it)->done) {
        (*it)->outcome.result = std::move((*it)->decoder->result());
        (*it)->outcome.result.finish = FinishReason::kCancelled;
      }
      release_locked(**it);
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->cancel) {
      (*it)->outcome.result.finish = FinishReason::kCancelled;
      release_locked(**it);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  // FIFO: the first waiting sequence that does not fit holds the others back.
  while (!waiting_.empty() && static_cast<int32_t>(active_.size()) < options_.max_sequences &&
         blocks_used_ + waiting_.front()->blocks <= options_.kv_budget_blocks) {
    std::shared_ptr<Sequence> seq = std::move(waiting_.front());
    waiting_.pop_front();
    blocks_used_ += seq->blocks;
    seq->admitted = true;
    active_.push_back(std::move(seq));
  }
  waiting_count_.store(waiting_.size(), std::memory_order_relaxed);
}

void BatchScheduler::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    sweep_and_admit_locked();
    if (stopping_) {
      for (auto& seq : active_) {
        seq->error = unavailable("the node is shutting down");
        release_locked(*seq);
      }
      for (auto& seq : waiting_) {
        seq->error = unavailable("the node is shutting down");
        release_locked(*seq);
      }
      active_.clear();
      waiting_.clear();
      waiting_count_.store(0, std::memory_order_relaxed);
      changed_.notify_all();
      return;
    }
    if (active_.empty()) {
      changed_.wait(lock);
      continue;
    }
    lock.unlock();
    step();
    lock.lock();
  }
}

void BatchScheduler::step() {
  Transformer& tf = *parts_.transformer;
  std::vector<std::shared_ptr<Sequence>> active;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    active = active_;
  }
  stepped_.clear();
  batch_.clear();
  interjected_ = false;
  open_caches(active);
  int64_t prefill_left = options_.prefill_chunk_tokens;
  // Prompts that finish within this step's chunk run first, without the
  // decoders: their first token is then one short step away, not a step of
  // every running stream (time to first token under load; in the small
  // preset with 16 streams a lone token's step is ~1/8 of a full one). The
  // step after always includes the decoders, so they wait at most one such
  // step; longer prompts are chunked into steps with the decoders as before.
  bool prompts_first = false;
  if (!last_step_prompts_only_) {
    int64_t left = prefill_left;
    bool any_decoding = false;
    for (const auto& seq : active) {
      if (!seq->cache) continue;
      if (seq->decoding) {
        any_decoding = true;
        continue;
      }
      const int64_t rest = static_cast<int64_t>(seq->job.prompt.size()) - seq->prefilled;
      if (rest <= left) prompts_first = true;
      left -= std::min(rest, left);
    }
    prompts_first = prompts_first && any_decoding;
  }
  last_step_prompts_only_ = prompts_first;
  bool decode_only = true;
  for (const auto& seq : active) {
    if (!seq->cache) continue;  // failed above
    if (seq->decoding) {
      if (prompts_first) continue;
      batch_.push_back({std::span(&seq->fed, 1), &*seq->cache, true});
    } else {
      if (prefill_left == 0) continue;
      const auto prompt_len = static_cast<int64_t>(seq->job.prompt.size());
      if (prompts_first && prompt_len - seq->prefilled > prefill_left) continue;
      const int64_t n = std::min(prompt_len - seq->prefilled, prefill_left);
      prefill_left -= n;
      decode_only = false;
      batch_.push_back({std::span(seq->job.prompt)
                            .subspan(static_cast<size_t>(seq->prefilled), static_cast<size_t>(n)),
                        &*seq->cache, seq->prefilled + n == prompt_len});
    }
    stepped_.push_back(seq.get());
  }
  if (batch_.empty()) return;
  step_decode_only_ = decode_only;
  if (parts_.on_step) parts_.on_step(step_info(batch_, decode_only));
  const Status status = tf.forward_batch(batch_, &logits_);
  finish_step(status, batch_, stepped_, logits_);
}

StepInfo BatchScheduler::step_info(const std::vector<SequenceStep>& batch, bool decode_only) {
  int64_t n_tokens = 0;
  for (const SequenceStep& s : batch) n_tokens += static_cast<int64_t>(s.tokens.size());
  return {static_cast<int64_t>(batch.size()), n_tokens, decode_only, batch.front().cache->n_past()};
}

void BatchScheduler::open_caches(const std::vector<std::shared_ptr<Sequence>>& sequences) {
  Transformer& tf = *parts_.transformer;
  // New sequences: a cache of their reserved blocks, and the longest cached
  // prefix of their prompt (never the whole prompt: its last token must run
  // to give the first logits).
  for (const auto& seq : sequences) {
    if (seq->cache) continue;
    // Its reserved blocks, never more than the context (a backend may size
    // its cache pool by the context).
    Result<KvCache> made =
        tf.new_cache(std::min(seq->blocks * options_.block_tokens, options_.context_tokens));
    if (!made.is_ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      seq->error = made.status();
      release_locked(*seq);
      continue;
    }
    seq->cache.emplace(std::move(*made));
    seq->prefill_start = Clock::now();
    const auto prompt_len = static_cast<int64_t>(seq->job.prompt.size());
    seq->prefilled = prefix_->restore(seq->job.prompt, prompt_len - 1, *seq->cache);
    seq->outcome.cached_tokens = seq->prefilled;
  }
}

void BatchScheduler::interject() {
  // Only into a step of decoders: into one of prompts it would put a later
  // prompt's first token before an earlier one's.
  if (interjected_ || !step_decode_only_ || waiting_count_.load(std::memory_order_relaxed) == 0) {
    return;
  }
  fresh_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // FIFO, as at a step boundary, and only prompts that one chunk finishes:
    // the paused step's streams wait for this one.
    int64_t left = options_.prefill_chunk_tokens;
    while (!waiting_.empty() && static_cast<int32_t>(active_.size()) < options_.max_sequences &&
           blocks_used_ + waiting_.front()->blocks <= options_.kv_budget_blocks) {
      const std::shared_ptr<Sequence>& next = waiting_.front();
      const auto prompt_len = static_cast<int64_t>(next->job.prompt.size());
      if (next->cancel || prompt_len > left) break;
      left -= prompt_len;
      std::shared_ptr<Sequence> seq = std::move(waiting_.front());
      waiting_.pop_front();
      blocks_used_ += seq->blocks;
      seq->admitted = true;
      active_.push_back(seq);
      fresh_.push_back(std::move(seq));
    }
    waiting_count_.store(waiting_.size(), std::memory_order_relaxed);
  }
  if (fresh_.empty()) return;
  interjected_ = true;
  open_caches(fresh_);
  nested_batch_.clear();
  nested_stepped_.clear();
  for (const auto& seq : fresh_) {
    if (!seq->cache) continue;  // failed in open_caches
    const auto prompt_len = static_cast<int64_t>(seq->job.prompt.size());
    nested_batch_.push_back({std::span(seq->job.prompt)
                                 .subspan(static_cast<size_t>(seq->prefilled),
                                          static_cast<size_t>(prompt_len - seq->prefilled)),
                             &*seq->cache, true});
    nested_stepped_.push_back(seq.get());
  }
  if (nested_batch_.empty()) {
    fresh_.clear();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++interjections_;
  }
  if (parts_.on_step) {
    StepInfo info = step_info(nested_batch_, false);
    info.between_layers = true;
    parts_.on_step(info);
  }
  const Status status = parts_.transformer->forward_between_layers(nested_batch_, &nested_logits_);
  finish_step(status, nested_batch_, nested_stepped_, nested_logits_);
  fresh_.clear();  // held until here: nested_stepped_ points into them
}

void BatchScheduler::finish_step(const Status& status, const std::vector<SequenceStep>& batch,
                                 const std::vector<Sequence*>& stepped,
                                 std::vector<float>& all_logits) {
  const int64_t vocab = parts_.transformer->config().vocab_size;
  int64_t n_tokens = 0;
  for (const SequenceStep& s : batch) n_tokens += static_cast<int64_t>(s.tokens.size());
  const Clock::time_point now = Clock::now();
  // Cancellations as they stand now: one sampled after this is dropped at
  // the next sweep like the others.
  std::vector<char>& cancelled = finish_cancelled_;
  cancelled.assign(stepped.size(), 0);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++steps_;
    step_tokens_ += static_cast<uint64_t>(n_tokens);
    step_sequences_ += batch.size();
    if (!status.is_ok()) {
      for (Sequence* seq : stepped) {
        seq->error = status;
        release_locked(*seq);
      }
      return;
    }
    for (size_t i = 0; i < stepped.size(); ++i) cancelled[i] = stepped[i]->cancel ? 1 : 0;
  }
  // Each sequence is sampled without the lock and its text published at
  // once, each under the lock for a moment: its caller's thread (and HTTP
  // client) runs on the pool's idle core while the next one is sampled,
  // instead of all of them waking together when the next forward starts.
  const auto interval = static_cast<size_t>(options_.stream_interval);
  size_t row = 0;
  for (size_t i = 0; i < stepped.size(); ++i) {
    Sequence& seq = *stepped[i];
    if (!seq.decoding) {
      seq.prefilled += static_cast<int64_t>(batch[i].tokens.size());
      if (!batch[i].logits) continue;  // more of the prompt to come
      seq.decoding = true;
      seq.outcome.result.prefill_seconds = ms_between(seq.prefill_start, now) / 1e3;
      seq.decode_start = now;
    } else {
      seq.outcome.step_ms.push_back(ms_between(seq.last_step, now));
    }
    seq.last_step = now;
    const std::span<float> logits(all_logits.data() + row * static_cast<size_t>(vocab),
                                  static_cast<size_t>(vocab));
    ++row;
    if (cancelled[i]) continue;  // dropped at the next sweep
    auto sink = [&seq](const TextDelta& d) {
      seq.pending.push_back(
          {std::string(d.text), std::vector<TokenLogprobs>(d.logprobs.begin(), d.logprobs.end())});
      return true;
    };
    Status sampled = seq.decoder->finished() ? Status::ok() : seq.decoder->step(logits, sink);
    const bool finished = sampled.is_ok() && seq.decoder->finished();
    if (sampled.is_ok() && !finished) seq.fed = seq.decoder->next_token();
    if (finished) {
      seq.decoder->finish(sink);
      GenerationResult& result = seq.decoder->result();
      // What the cache holds: the prompt and the generated tokens fed back.
      std::vector<int32_t> cached = seq.job.prompt;
      cached.insert(cached.end(), result.tokens.begin(), result.tokens.end());
      prefix_->insert(cached, std::move(*seq.cache));  // the sequence is done with it
      result.prefill_seconds = seq.outcome.result.prefill_seconds;
      result.decode_seconds = ms_between(seq.decode_start, now) / 1e3;
      seq.outcome.result = std::move(result);
      seq.outcome.logits = std::move(seq.decoder->logits());
    }
    // The text and the end are published together: run() sees the end
    // only after the last text. The caller is woken for its first text at
    // once (time to first token), then once stream_interval pieces of text
    // (about one a step) wait, and at its end (release_locked).
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (Delta& d : seq.pending) seq.outbox.push_back(std::move(d));
      seq.pending.clear();
      if (!sampled.is_ok()) {
        seq.error = sampled;
        release_locked(seq);
      } else if (finished) {
        release_locked(seq);  // its blocks are free before run() returns
      } else if (!seq.outbox.empty() && (!seq.delivered || seq.outbox.size() >= interval)) {
        seq.delivered = true;
        seq.flush = true;
        wake = true;
      }
    }
    if (wake) seq.ready.notify_one();
  }
}

BatchScheduler::Stats BatchScheduler::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s.active = static_cast<int64_t>(active_.size());
    s.waiting = static_cast<int64_t>(waiting_.size());
    s.blocks_used = blocks_used_;
    s.steps = steps_;
    s.step_tokens = step_tokens_;
    s.step_sequences = step_sequences_;
    s.interjections = interjections_;
  }
  s.blocks_total = options_.kv_budget_blocks;
  s.block_tokens = options_.block_tokens;
  s.max_sequences = options_.max_sequences;
  s.prefix = prefix_->stats();
  return s;
}

}  // namespace dancemoe::node
