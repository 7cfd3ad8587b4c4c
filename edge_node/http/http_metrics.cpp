#include "edge_node/http/http_metrics.h"

#include <string>

namespace dancemoe::node {

std::string_view endpoint_label(Endpoint e) {
  switch (e) {
    case Endpoint::kCompletions:
      return "/v1/completions";
    case Endpoint::kChatCompletions:
      return "/v1/chat/completions";
    case Endpoint::kGenerate:
      return "/v1/generate";
    case Endpoint::kModels:
      return "/v1/models";
    case Endpoint::kHealth:
      return "/health";
    case Endpoint::kMetrics:
      return "/metrics";
    case Endpoint::kStats:
      return "/v1/stats";
    case Endpoint::kOther:
      break;
  }
  return "other";
}

Endpoint endpoint_of_path(std::string_view path) {
  for (size_t i = 0; i + 1 < kNumEndpoints; ++i) {
    const auto e = static_cast<Endpoint>(i);
    if (path == endpoint_label(e)) return e;
  }
  return Endpoint::kOther;
}

HttpMetrics::HttpMetrics() = default;

void HttpMetrics::record_request(Endpoint endpoint, int http_status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, http_status}];
}

void HttpMetrics::observe_latency(Endpoint endpoint, double seconds) {
  const auto i = static_cast<size_t>(endpoint);
  if (i < kNumGenerationEndpoints) generation_[i].latency.observe(seconds);
}

void HttpMetrics::observe_first_token(Endpoint endpoint, double seconds) {
  const auto i = static_cast<size_t>(endpoint);
  if (i < kNumGenerationEndpoints) generation_[i].first_token.observe(seconds);
}

void HttpMetrics::add_tokens(Endpoint endpoint, uint64_t prompt_tokens,
                             uint64_t completion_tokens) {
  const auto i = static_cast<size_t>(endpoint);
  if (i >= kNumGenerationEndpoints) return;
  std::lock_guard<std::mutex> lock(mutex_);
  generation_[i].prompt_tokens += prompt_tokens;
  generation_[i].completion_tokens += completion_tokens;
}

void HttpMetrics::record_cancelled(Endpoint endpoint) {
  const auto i = static_cast<size_t>(endpoint);
  if (i >= kNumGenerationEndpoints) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++generation_[i].cancelled;
}

void HttpMetrics::write(http::PrometheusWriter& out, size_t queue_waiting, bool queue_running,
                        uint64_t queue_rejected) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out.family("dancemoe_http_requests_total", "counter",
             "HTTP requests answered, by endpoint and status code");
  for (const auto& [key, n] : requests_) {
    out.sample("dancemoe_http_requests_total",
               {{"endpoint", std::string(endpoint_label(key.first))},
                {"status", std::to_string(key.second)}},
               static_cast<double>(n));
  }
  auto per_endpoint = [&](const char* name, const char* type, const char* help, auto value) {
    out.family(name, type, help);
    for (size_t i = 0; i < kNumGenerationEndpoints; ++i) {
      out.sample(name, {{"endpoint", std::string(endpoint_label(static_cast<Endpoint>(i)))}},
                 static_cast<double>(value(generation_[i])));
    }
  };
  per_endpoint("dancemoe_http_prompt_tokens_total", "counter", "prompt tokens of answered requests",
               [](const PerGeneration& g) { return g.prompt_tokens; });
  per_endpoint("dancemoe_http_generated_tokens_total", "counter",
               "tokens generated for answered requests",
               [](const PerGeneration& g) { return g.completion_tokens; });
  per_endpoint("dancemoe_http_requests_cancelled_total", "counter",
               "generations stopped early because the client went away",
               [](const PerGeneration& g) { return g.cancelled; });
  out.family("dancemoe_http_request_duration_seconds", "histogram",
             "time from request arrival to the last byte of the answer (generation endpoints)");
  for (size_t i = 0; i < kNumGenerationEndpoints; ++i) {
    out.histogram("dancemoe_http_request_duration_seconds",
                  {{"endpoint", std::string(endpoint_label(static_cast<Endpoint>(i)))}},
                  generation_[i].latency.snapshot());
  }
  out.family("dancemoe_http_time_to_first_token_seconds", "histogram",
             "time from request arrival to the first generated text (queueing included)");
  for (size_t i = 0; i < kNumGenerationEndpoints; ++i) {
    out.histogram("dancemoe_http_time_to_first_token_seconds",
                  {{"endpoint", std::string(endpoint_label(static_cast<Endpoint>(i)))}},
                  generation_[i].first_token.snapshot());
  }
  out.family("dancemoe_http_queue_waiting_requests", "gauge",
             "generation requests waiting for the engine");
  out.sample("dancemoe_http_queue_waiting_requests", {}, static_cast<double>(queue_waiting));
  out.family("dancemoe_http_queue_running_requests", "gauge",
             "generation requests running (the engine runs one at a time)");
  out.sample("dancemoe_http_queue_running_requests", {}, queue_running ? 1.0 : 0.0);
  out.family("dancemoe_http_queue_rejected_total", "counter",
             "generation requests refused with 429 because the queue was full");
  out.sample("dancemoe_http_queue_rejected_total", {}, static_cast<double>(queue_rejected));
}

}  // namespace dancemoe::node
