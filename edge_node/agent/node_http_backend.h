// NodeHttpBackend: what a node's HTTP API (edge_node/http) asks of the node
// -- health, statistics, generation, the served model, tokenization and
// Prometheus metrics -- answered from the node's parts. An adapter only: it
// owns nothing and decides nothing the parts do not already know.
//
// Thread-safe as far as the parts are: HTTP handler threads call it
// concurrently, and generations queue on the PromptRunner's mutex.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "edge_node/agent/node_options.h"
#include "edge_node/agent/node_parts.h"
#include "edge_node/http/http_server.h"

namespace dancemoe::node {

class NodeHttpBackend final : public HttpBackend {
 public:
  // Both must outlive the backend.
  NodeHttpBackend(const NodeOptions& options, NodeParts& parts)
      : options_(options), parts_(parts) {}

  std::pair<bool, std::string> health() override;
  nlohmann::json stats() override;
  Result<GenerateResponse> generate(const GenerateRequest& request) override;
  ServedModel served_model() override;
  Result<std::vector<int32_t>> tokenize(const std::string& text, bool add_special_tokens) override;
  Result<std::string> detokenize(std::span<const int32_t> ids, bool skip_special) override;
  std::string token_bytes(int32_t id) override;
  void write_metrics(http::PrometheusWriter& out) override;

 private:
  const NodeOptions& options_;
  NodeParts& parts_;
};

}  // namespace dancemoe::node
