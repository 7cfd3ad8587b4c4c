// What the HTTP load benchmarks share: one streamed /v1/completions request
// timed to its first text (the client side of bench_http_load and
// bench_batching), a quantile of the timings, and a process's RSS.
#pragma once

#include <httplib.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dancemoe::bench {

// The q-quantile of v (0 when empty).
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// VmRSS of a process in KiB (0 when unreadable).
inline long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

struct StreamOutcome {
  bool ok = false;     // exactly max_tokens tokens, [DONE] seen
  double ttft_s = 0;   // to the first non-empty text
  int64_t tokens = 0;  // the usage's completion_tokens
  std::string text;
  std::string error;
};

// One streamed completion of `prompt` (temperature 0.8, ignore_eos, so it
// always runs max_tokens), parsed as its events arrive.
inline StreamOutcome streamed_completion(const std::string& host, int port,
                                         const std::string& prompt, int max_tokens, uint64_t seed) {
  using nlohmann::json;
  using Clock = std::chrono::steady_clock;
  StreamOutcome o;
  httplib::Client client(host, port);
  client.set_read_timeout(600, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = json{{"prompt", prompt},
                  {"max_tokens", max_tokens},
                  {"temperature", 0.8},
                  {"seed", seed},
                  {"ignore_eos", true},
                  {"stream", true},
                  {"stream_options", {{"include_usage", true}}}}
                 .dump();
  const Clock::time_point start = Clock::now();
  std::string buffer;
  bool first = true;
  bool done = false;
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    buffer.append(data, len);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        done = true;
        continue;
      }
      const json j = json::parse(payload, nullptr, false);
      if (j.is_discarded() || j.contains("error")) {
        o.error = "bad event: " + payload.substr(0, 200);
        return false;
      }
      if (!j["choices"].empty()) {
        const std::string text = j["choices"][0].value("text", "");
        if (first && !text.empty()) {
          o.ttft_s = std::chrono::duration<double>(Clock::now() - start).count();
          first = false;
        }
        o.text += text;
      }
      if (j.contains("usage")) o.tokens = j["usage"]["completion_tokens"].get<int64_t>();
    }
    return true;
  };
  const httplib::Result res = client.send(req);
  if (!res) {
    if (o.error.empty()) o.error = "transport: " + httplib::to_string(res.error());
    return o;
  }
  if (res->status != 200) {
    o.error = "HTTP " + std::to_string(res->status);
    return o;
  }
  if (!done || first) {
    o.error = "stream ended without [DONE] or text";
    return o;
  }
  o.ok = o.tokens == max_tokens;
  if (!o.ok) o.error = "got " + std::to_string(o.tokens) + " tokens";
  return o;
}

}  // namespace dancemoe::bench
