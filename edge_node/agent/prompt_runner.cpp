#include "edge_node/agent/prompt_runner.h"

#include <algorithm>
#include <chrono>

namespace dancemoe::node {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

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
  DMOE_ASSIGN_OR_RETURN(KvCache cache, parts.transformer->new_cache(parts.context_tokens));
  e->cache_.emplace(std::move(cache));
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
  parts.transformer->set_routing_observer(
      [raw](int64_t layer, const RoutingDecision& routing) { raw->on_routing(layer, routing); });
  return e;
}

bool PromptRunner::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

void PromptRunner::on_routing(int64_t layer, const RoutingDecision& routing) {
  if (parts_.replay != nullptr) parts_.replay->begin_forward(cache_->n_past());
  if (parts_.trace != nullptr) {
    parts_.trace->begin_forward(request_id_, cache_->n_past());
    parts_.trace->on_routing(layer, routing);
  }
  if (layer != first_moe_layer_) return;
  parts_.log->record_tokens(static_cast<uint64_t>(routing.n_tokens));
  const Clock::time_point now = Clock::now();
  forward_starts_.push_back(now);
  if (parts_.throttle == nullptr) return;
  if (routing.n_tokens == 1 && last_step_valid_) {
    const bool loading = parts_.migration_loading && parts_.migration_loading();
    parts_.throttle->observe_token_latency(
        std::chrono::duration<double, std::micro>(now - last_step_).count(), loading);
  }
  last_step_ = now;
  last_step_valid_ = true;
}

Result<GenerateResponse> PromptRunner::generate(const GenerateRequest& request) {
  in_flight_.fetch_add(1);
  std::lock_guard<std::mutex> lock(mutex_);
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
  if (needed > cache_->capacity()) {
    return invalid_argument("prompt (" + std::to_string(prompt.size()) + " tokens) + max_tokens (" +
                            std::to_string(request.max_tokens) + ") exceed the context of " +
                            std::to_string(cache_->capacity()) + " tokens (--context)");
  }
  DMOE_RETURN_IF_ERROR(request.sampling.validate());

  ++request_id_;
  last_step_valid_ = false;
  forward_starts_.clear();
  if (parts_.replay != nullptr) parts_.replay->begin_request(prompt.front());
  const ServedCounts before = parts_.log->totals();
  parts_.log->record_request();
  Result<GenerateResponse> response = invalid_argument("unreachable");
  if (parts_.tokenizer != nullptr && !request.return_logits) {
    GenerationParams params;
    params.max_tokens = request.max_tokens;
    params.stop = request.stop;
    params.sampling = request.sampling;
    params.ignore_eos = request.ignore_eos;
    params.cancelled = request.cancelled;
    params.n_logprobs = request.n_logprobs;
    params.grammar = request.grammar;
    params.skip_special_tokens = request.skip_special_tokens;
    if (request.grammar && !vocabulary_) {
      vocabulary_ = TokenVocabulary::build(*parts_.tokenizer, config.vocab_size);
    }
    Generator generator(*parts_.transformer, *parts_.tokenizer, eos_ids_);
    generator.set_vocabulary(vocabulary_);
    Result<GenerationResult> result = generator.generate(prompt, *cache_, params, request.on_text);
    if (result.is_ok()) {
      GenerateResponse r;
      r.text = std::move(result->text);
      r.tokens = std::move(result->tokens);
      r.logprobs = std::move(result->logprobs);
      r.prompt_tokens = result->prompt_tokens;
      r.finish_reason = std::string(finish_reason_name(result->finish));
      r.prefill_ms = result->prefill_seconds * 1e3;
      r.decode_ms = result->decode_seconds * 1e3;
      response = std::move(r);
    } else {
      response = result.status();
    }
  } else {
    response = run_token_loop(prompt, request);
  }
  if (parts_.trace != nullptr) {
    if (response.is_ok()) {
      Status traced = parts_.trace->end_request();
      if (!traced.is_ok()) response = traced;
    } else {
      parts_.trace->discard_request();  // a failed request leaves no partial rows
    }
  }
  if (!response.is_ok()) return response;
  response->served = minus(parts_.log->totals(), before);
  // The first forward is the prompt's; each later one decodes a token.
  const Clock::time_point end = Clock::now();
  for (size_t i = 1; i < forward_starts_.size(); ++i) {
    const Clock::time_point until = i + 1 < forward_starts_.size() ? forward_starts_[i + 1] : end;
    response->step_ms.push_back(
        std::chrono::duration<double, std::milli>(until - forward_starts_[i]).count());
  }
  return response;
}

Result<GenerateResponse> PromptRunner::run_token_loop(std::span<const int32_t> prompt,
                                                      const GenerateRequest& request) {
  GenerateResponse r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  r.finish_reason = "length";
  cache_->clear();
  Sampler sampler(request.sampling);
  sampler.set_prompt(prompt);
  std::vector<float> logits;
  std::vector<float> row;
  const Clock::time_point prefill_start = Clock::now();
  DMOE_RETURN_IF_ERROR(parts_.transformer->forward(prompt, *cache_, LogitsMode::kLast, &logits));
  r.prefill_ms = ms_since(prefill_start);
  const Clock::time_point decode_start = Clock::now();
  for (int32_t step = 0; step < request.max_tokens; ++step) {
    row = logits;
    sampler.adjust(row);
    const int32_t next = sampler.sample(row);
    sampler.accept(next);
    if (request.return_logits) r.logits.push_back(logits);
    if (!request.ignore_eos && is_eos(next)) {
      r.finish_reason = "stop";
      break;
    }
    r.tokens.push_back(next);
    if (request.cancelled && request.cancelled()) {
      r.finish_reason = "cancelled";
      break;
    }
    if (step + 1 == request.max_tokens) break;
    const int32_t fed[1] = {next};
    DMOE_RETURN_IF_ERROR(parts_.transformer->forward(fed, *cache_, LogitsMode::kLast, &logits));
  }
  r.decode_ms = ms_since(decode_start);
  if (parts_.tokenizer != nullptr)
    r.text = parts_.tokenizer->decode(r.tokens, request.skip_special_tokens);
  return r;
}

}  // namespace dancemoe::node
