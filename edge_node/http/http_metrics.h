// HttpMetrics: what the HTTP API itself counts, for GET /metrics --
// requests by endpoint and status, latency and time-to-first-token
// histograms of the generation endpoints, tokens in and out, cancellations.
// The node's own counters (activations, peers, experts, migrations) are
// written by the backend beside these (HttpBackend::write_metrics).
//
// Label sets are bounded: `endpoint` is one of the fixed routes (anything
// else is "other"), `status` an HTTP status code. Never a prompt or an id.
// Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "common/http/prometheus_text.h"

namespace dancemoe::node {

enum class Endpoint {
  kCompletions,
  kChatCompletions,
  kGenerate,
  kModels,
  kHealth,
  kMetrics,
  kStats,
  kOther,
};
inline constexpr size_t kNumEndpoints = 8;
inline constexpr size_t kNumGenerationEndpoints = 3;  // the first three

std::string_view endpoint_label(Endpoint endpoint);  // "/v1/completions", ...
Endpoint endpoint_of_path(std::string_view path);

class HttpMetrics {
 public:
  HttpMetrics();

  void record_request(Endpoint endpoint, int http_status);
  // Generation endpoints only (others are ignored).
  void observe_latency(Endpoint endpoint, double seconds);
  void observe_first_token(Endpoint endpoint, double seconds);
  void add_tokens(Endpoint endpoint, uint64_t prompt_tokens, uint64_t completion_tokens);
  void record_cancelled(Endpoint endpoint);

  // Queue state is the queue's; passed in so this class stays a sink.
  void write(http::PrometheusWriter& out, size_t queue_waiting, bool queue_running,
             uint64_t queue_rejected) const;

 private:
  struct PerGeneration {
    http::BucketHistogram latency{http::request_seconds_buckets()};
    http::BucketHistogram first_token{http::request_seconds_buckets()};
    uint64_t prompt_tokens = 0;      // guarded by mutex_
    uint64_t completion_tokens = 0;  // guarded by mutex_
    uint64_t cancelled = 0;          // guarded by mutex_
  };

  mutable std::mutex mutex_;
  std::map<std::pair<Endpoint, int>, uint64_t> requests_;
  std::array<PerGeneration, kNumGenerationEndpoints> generation_;
};

}  // namespace dancemoe::node
