#include "edge_node/agent/prompt_runner.h"

#include <algorithm>
#include <chrono>

namespace dancemoe::node {
namespace {

using SteadyClock = std::chrono::steady_clock;

ServedCounts minus(const ServedCounts& a, const ServedCounts& b) {
  ServedCounts d;
  d.activations = a.activations - b.activations;
  d.local = a.local - b.local;
  d.remote = a.remote - b.remote;
  d.offloaded = a.offloaded - b.offloaded;
  d.remote_calls = a.remote_calls - b.remote_calls;
  d.remote_failures = a.remote_failures - b.remote_failures;
  d.tokens = a.tokens - b.tokens;
  d.requests = a.requests - b.requests;
  d.steps = a.steps - b.steps;
  d.local_steps = a.local_steps - b.local_steps;
  d.remote_bytes = a.remote_bytes - b.remote_bytes;
  return d;
}

}  // namespace

Result<std::unique_ptr<PromptRunner>> PromptRunner::create(Parts parts) {
  if (parts.transformer == nullptr || parts.log == nullptr) {
    return internal_error("PromptRunner needs a transformer and an activation log");
  }
  std::unique_ptr<PromptRunner> e(new PromptRunner(parts));
  const ModelConfig& config = parts.transformer->config();
  if (parts.tokenizer != nullptr) {
    e->eos_ids_ = collect_eos_ids(config, *parts.tokenizer);
  } else {
    e->eos_ids_ = config.eos_token_ids;
  }
  for (size_t l = 0; l < config.layer_is_moe.size(); ++l) {
    if (config.layer_is_moe[l]) {
      e->first_moe_layer_ = static_cast<int64_t>(l);
      break;
    }
  }
  PromptRunner* raw = e.get();
  e->exclusive_ = parts.trace != nullptr || parts.replay != nullptr;
  BatchOptions batch = parts.batch;
  batch.context_tokens = parts.context_tokens;
  if (e->exclusive_) batch.max_sequences = 1;  // traces and replays are per request
  BatchScheduler::Parts sp;
  sp.transformer = parts.transformer;
  sp.tokenizer = parts.tokenizer;
  sp.eos_ids = e->eos_ids_;
  sp.on_step = [raw](const StepInfo& step) { raw->on_step(step); };
  DMOE_ASSIGN_OR_RETURN(e->scheduler_, BatchScheduler::create(std::move(sp), batch));
  parts.transformer->set_routing_observer(
      [raw](int64_t layer, const RoutingDecision& routing) { raw->on_routing(layer, routing); });
  return e;
}

void PromptRunner::on_step(const StepInfo& step) {
  if (step.between_layers) {
    // The running step's position and kind stay (its forward goes on after
    // this one); no token latency is measured across the two.
    last_step_valid_ = false;
    return;
  }
  step_position_ = step.first_position;
  step_decode_only_ = step.decode_only;
}

void PromptRunner::on_routing(int64_t layer, const RoutingDecision& routing) {
  if (parts_.replay != nullptr) parts_.replay->begin_forward(step_position_);
  if (parts_.trace != nullptr) {
    parts_.trace->begin_forward(request_id_, step_position_);
    parts_.trace->on_routing(layer, routing);
  }
  if (layer != first_moe_layer_) return;
  parts_.log->record_tokens(static_cast<uint64_t>(routing.n_tokens));
  const SteadyClock::time_point now = SteadyClock::now();
  if (parts_.throttle == nullptr) return;
  if (step_decode_only_ && last_step_valid_) {
    const bool loading = parts_.migration_loading && parts_.migration_loading();
    parts_.throttle->observe_token_latency(
        std::chrono::duration<double, std::micro>(now - last_step_).count(), loading);
  }
  last_step_ = now;
  last_step_valid_ = step_decode_only_;
}

Result<GenerateResponse> PromptRunner::generate(const GenerateRequest& request) {
  in_flight_.fetch_add(1);
  struct Leave {
    std::atomic<uint32_t>& n;
    ~Leave() { n.fetch_sub(1); }
  } leave{in_flight_};

  const ModelConfig& config = parts_.transformer->config();
  std::vector<int32_t> prompt;
  if (request.prompt_tokens) {
    prompt = *request.prompt_tokens;
    for (size_t i = 0; i < prompt.size(); ++i) {
      if (prompt[i] < 0 || prompt[i] >= config.vocab_size) {
        return invalid_argument(
            "prompt_tokens[" + std::to_string(i) + "] = " + std::to_string(prompt[i]) +
            " is outside the vocabulary [0, " + std::to_string(config.vocab_size) + ")");
      }
    }
  } else {
    if (parts_.tokenizer == nullptr) {
      return invalid_argument("this model has no tokenizer.json: send prompt_tokens");
    }
    DMOE_ASSIGN_OR_RETURN(prompt, parts_.tokenizer->encode(request.prompt, true));
  }
  if (prompt.empty()) return invalid_argument("prompt: empty (no tokens)");
  if (request.max_tokens < 1) return invalid_argument("max_tokens: must be at least 1");
  const int64_t needed = static_cast<int64_t>(prompt.size()) + request.max_tokens;
  if (needed > parts_.context_tokens) {
    return invalid_argument("prompt (" + std::to_string(prompt.size()) + " tokens) + max_tokens (" +
                            std::to_string(request.max_tokens) + ") exceed the context of " +
                            std::to_string(parts_.context_tokens) + " tokens (--context)");
  }
  DMOE_RETURN_IF_ERROR(request.sampling.validate());
  if (!exclusive_) return run(std::move(prompt), request);

  std::lock_guard<std::mutex> lock(exclusive_mutex_);
  ++request_id_;  // read by the observers, which run while run() waits
  last_step_valid_ = false;
  if (parts_.replay != nullptr) parts_.replay->begin_request(prompt.front());
  Result<GenerateResponse> response = run(std::move(prompt), request);
  if (parts_.trace != nullptr) {
    if (response.is_ok()) {
      Status traced = parts_.trace->end_request();
      if (!traced.is_ok()) response = traced;
    } else {
      parts_.trace->discard_request();  // a failed request leaves no partial rows
    }
  }
  return response;
}

Result<GenerateResponse> PromptRunner::run(std::vector<int32_t> prompt,
                                           const GenerateRequest& request) {
  SequenceJob job;
  job.params.max_tokens = request.max_tokens;
  job.params.stop = request.stop;
  job.params.sampling = request.sampling;
  job.params.ignore_eos = request.ignore_eos;
  job.params.n_logprobs = request.n_logprobs;
  job.params.grammar = request.grammar;
  job.params.grammar_field = request.grammar_field;
  job.params.skip_special_tokens = request.skip_special_tokens;
  job.keep_logits = request.return_logits;
  if (request.grammar && parts_.tokenizer != nullptr) {
    std::lock_guard<std::mutex> lock(vocabulary_mutex_);
    if (!vocabulary_) {
      vocabulary_ =
          TokenVocabulary::build(*parts_.tokenizer, parts_.transformer->config().vocab_size);
    }
    job.vocabulary = vocabulary_;
  }
  if (!request.return_logits) job.on_text = request.on_text;
  job.cancelled = request.cancelled;
  job.prompt = std::move(prompt);

  const ServedCounts before = parts_.log->totals();
  parts_.log->record_request();
  DMOE_ASSIGN_OR_RETURN(SequenceOutcome outcome, scheduler_->run(std::move(job)));
  GenerateResponse r;
  GenerationResult& result = outcome.result;
  r.tokens = std::move(result.tokens);
  r.logprobs = std::move(result.logprobs);
  r.prompt_tokens = result.prompt_tokens;
  r.cached_tokens = outcome.cached_tokens;
  r.finish_reason = std::string(finish_reason_name(result.finish));
  r.prefill_ms = result.prefill_seconds * 1e3;
  r.decode_ms = result.decode_seconds * 1e3;
  r.step_ms = std::move(outcome.step_ms);
  r.logits = std::move(outcome.logits);
  if (request.return_logits && parts_.tokenizer != nullptr) {
    r.text = parts_.tokenizer->decode(r.tokens, true);
  } else {
    r.text = std::move(result.text);
  }
  r.served = minus(parts_.log->totals(), before);
  return r;
}

}  // namespace dancemoe::node
