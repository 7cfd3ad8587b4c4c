#include "edge_node/trace/trace_writer.h"

#include <algorithm>

namespace dancemoe::node {

Result<std::unique_ptr<TraceWriter>> TraceWriter::open(const std::filesystem::path& path,
                                                       const ModelConfig& config,
                                                       std::string origin) {
  if (origin.find(',') != std::string::npos || origin.find('\n') != std::string::npos) {
    return invalid_argument("--record-trace: the node id '" + origin +
                            "' contains a comma or newline, which the trace format cannot hold");
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter());
  w->path_ = path;
  w->origin_ = std::move(origin);
  w->out_.open(path, std::ios::out | std::ios::trunc);
  if (!w->out_) return unavailable("--record-trace: cannot create " + path.string());
  int32_t next = 0;
  for (bool moe : config.layer_is_moe) w->moe_index_.push_back(moe ? next++ : -1);
  std::string header = "origin_node,request_id,token_index,layer";
  for (int64_t k = 0; k < config.n_experts_per_token; ++k) header += ",e" + std::to_string(k);
  w->out_ << header << '\n';
  w->out_.flush();
  if (!w->out_) return unavailable("--record-trace: cannot write " + path.string());
  return w;
}

void TraceWriter::begin_forward(int64_t request_id, int64_t first_position) {
  request_id_ = request_id;
  first_position_ = first_position;
}

void TraceWriter::on_routing(int64_t layer, const RoutingDecision& routing) {
  const int32_t moe_layer = moe_index_[static_cast<size_t>(layer)];
  if (moe_layer < 0) return;
  for (int64_t t = 0; t < routing.n_tokens; ++t) {
    buffer_ += origin_;
    buffer_ += ',';
    buffer_ += std::to_string(request_id_);
    buffer_ += ',';
    buffer_ += std::to_string(first_position_ + t);
    buffer_ += ',';
    buffer_ += std::to_string(moe_layer);
    for (int64_t k = 0; k < routing.top_k; ++k) {
      buffer_ += ',';
      buffer_ += std::to_string(routing.expert(t, k));
    }
    buffer_ += '\n';
    ++rows_;
  }
}

Status TraceWriter::end_request() {
  out_ << buffer_;
  out_.flush();
  buffer_.clear();
  if (!out_) return unavailable("--record-trace: cannot write " + path_.string());
  return Status::ok();
}

void TraceWriter::discard_request() {
  rows_ -= static_cast<uint64_t>(std::count(buffer_.begin(), buffer_.end(), '\n'));
  buffer_.clear();
}

}  // namespace dancemoe::node
