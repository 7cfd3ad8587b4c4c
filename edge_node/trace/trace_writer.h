// TraceWriter: `dancemoe-node --record-trace FILE` -- the router's choices
// for every token this node serves, in the simulator's routing-trace format
// (docs/placement/trace-format.md; the reader is
// common/placement/routing_trace.h, which writes whole traces, not a stream):
//
//   origin_node,request_id,token_index,layer,e0,...,e{k-1}
//
// one row per (request, token, MoE layer); `layer` is the index among MoE
// layers, e0.. the experts in the router's rank order, token_index the
// token's position in the request (prompt tokens first, then each generated
// token that is fed back). Rows are buffered and flushed at the end of each
// request, so a trace read while the node runs holds whole requests.
//
// Not thread-safe: used from the thread that runs the forward pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/inference/routing.h"
#include "common/model/model_config.h"

namespace dancemoe::node {

class TraceWriter {
 public:
  // Creates (truncates) the file and writes the header. `origin` may not contain commas.
  static Result<std::unique_ptr<TraceWriter>> open(const std::filesystem::path& path,
                                                   const ModelConfig& config, std::string origin);

  // The request whose forwards follow; `first_position` is the position of
  // the next token fed to the model.
  void begin_forward(int64_t request_id, int64_t first_position);
  // From Transformer::set_routing_observer: `layer` is the absolute layer index.
  void on_routing(int64_t layer, const RoutingDecision& routing);
  // Flushes the rows of the request to the file.
  Status end_request();
  // Drops the rows of a request that failed (the format wants whole requests).
  void discard_request();

  uint64_t rows_written() const { return rows_; }

 private:
  TraceWriter() = default;

  std::filesystem::path path_;
  std::ofstream out_;
  std::string origin_;
  std::vector<int32_t> moe_index_;  // [n_layers]: index among MoE layers, -1 for dense
  int64_t request_id_ = 0;
  int64_t first_position_ = 0;
  std::string buffer_;
  uint64_t rows_ = 0;
};

}  // namespace dancemoe::node
