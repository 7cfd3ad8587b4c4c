// Routing traces: which experts the router chose, per token and layer.
//
// Format (what the node's activation logger will record; documented in
// docs/placement/trace-format.md). A CSV file with a header row:
//
//   origin_node,request_id,token_index,layer,e0,e1,...,e{k-1}
//   a,17,0,0,6,54,34,15,30,3,53,23
//
//   origin_node  id of the node where the request entered (no commas)
//   request_id   integer, unique per origin node
//   token_index  0-based position of the token within the request
//   layer        0-based index among the MoE layers
//   e0..e{k-1}   the top-k expert ids in the router's rank order (e0 = highest weight)
//
// Every (request, token) has one row per MoE layer; rows may come in any
// order. The reader also accepts the column names of the shared OLMoE trace
// (../shared/traces/olmoe_1b7b_domains/tokens_sample.csv): `domain` for
// origin_node and `sequence_id` for request_id, so those files are read
// through the same code. Aggregated counts (counts_by_domain.csv:
// `domain|origin_node,layer,expert,count`) are read by read_counts_csv.
//
// Values; readers report malformed rows as invalid_argument with file:line.
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

struct TraceRequest {
  int32_t origin = 0;  // index into RoutingTrace::origins
  int64_t id = 0;
  int32_t n_tokens = 0;
  // experts[(token * n_layers + layer) * top_k + rank]
  std::vector<int16_t> experts;
};

struct RoutingTrace {
  int32_t n_layers = 0;
  int32_t top_k = 0;
  int32_t max_expert = -1;           // largest expert id seen
  std::vector<std::string> origins;  // distinct origin ids, in order of first appearance
  std::vector<TraceRequest> requests;

  int32_t origin_index(const std::string& id) const;  // -1 if absent
};

Result<RoutingTrace> read_routing_trace(const std::filesystem::path& path);

Status write_routing_trace(const std::filesystem::path& path, const RoutingTrace& trace);

// counts[origin][layer * n_experts + expert], dense.
struct CountsTable {
  std::vector<std::string> origins;
  int32_t n_layers = 0;
  int32_t n_experts = 0;
  std::vector<std::vector<double>> counts;

  int32_t origin_index(const std::string& id) const;  // -1 if absent
};

// Reads `origin_node|domain,layer,expert,count` rows into a table of
// n_layers x n_experts per origin (missing rows are zeros). Layer or expert
// ids outside the shape are errors.
Result<CountsTable> read_counts_csv(const std::filesystem::path& path, int32_t n_layers,
                                    int32_t n_experts);

}  // namespace dancemoe
