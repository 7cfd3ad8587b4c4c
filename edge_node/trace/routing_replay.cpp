#include "edge_node/trace/routing_replay.h"

#include <sstream>

namespace dancemoe::node {
namespace {

// "general,coding" -> {"general", "coding"}.
Result<std::vector<std::string>> parse_spec(const std::string& spec) {
  std::vector<std::string> out;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty())
      return invalid_argument("--replay-origins: an empty origin in '" + spec + "'");
    out.push_back(item);
  }
  if (out.empty()) return invalid_argument("--replay-origins: expected at least one origin");
  return out;
}

}  // namespace

Result<std::unique_ptr<RoutingReplay>> RoutingReplay::open(const std::filesystem::path& path,
                                                           const std::string& spec,
                                                           const ModelConfig& config) {
  std::unique_ptr<RoutingReplay> r(new RoutingReplay());
  DMOE_ASSIGN_OR_RETURN(r->trace_, read_routing_trace(path));
  int32_t n_moe = 0;
  for (int64_t l = 0; l < config.n_layers; ++l) {
    r->moe_index_.push_back(config.layer_is_moe[static_cast<size_t>(l)] ? n_moe++ : -1);
  }
  const RoutingTrace& t = r->trace_;
  if (t.n_layers != n_moe || t.top_k != config.n_experts_per_token ||
      t.max_expert >= config.n_experts) {
    return invalid_argument(path.string() + ": the trace has " + std::to_string(t.n_layers) +
                            " MoE layers, top-" + std::to_string(t.top_k) + ", expert ids up to " +
                            std::to_string(t.max_expert) + "; the model has " +
                            std::to_string(n_moe) + " MoE layers, top-" +
                            std::to_string(config.n_experts_per_token) + ", " +
                            std::to_string(config.n_experts) + " experts per layer");
  }
  r->by_origin_.resize(t.origins.size());
  for (size_t i = 0; i < t.requests.size(); ++i) {
    r->by_origin_[t.requests[i].origin].push_back(static_cast<int32_t>(i));
  }
  DMOE_ASSIGN_OR_RETURN(const std::vector<std::string> names, parse_spec(spec));
  for (const std::string& name : names) {
    const int32_t o = t.origin_index(name);
    if (o < 0) {
      std::string known;
      for (const std::string& origin : t.origins) known += (known.empty() ? "" : ", ") + origin;
      return invalid_argument("--replay-origins: '" + name + "' is not an origin of " +
                              path.string() + " (" + known + ")");
    }
    r->origins_.push_back(o);
  }
  r->next_of_origin_.assign(t.origins.size(), 0);
  return r;
}

void RoutingReplay::begin_request(int32_t first_token) {
  const int64_t n = static_cast<int64_t>(origins_.size());
  const int32_t origin = origins_[static_cast<size_t>(((first_token % n) + n) % n)];
  const std::vector<int32_t>& pool = by_origin_[origin];
  current_ =
      pool[static_cast<size_t>(next_of_origin_[origin]++ % static_cast<int64_t>(pool.size()))];
  first_position_ = 0;
}

const RoutingDecision& RoutingReplay::rewrite(int64_t layer, const RoutingDecision& routing) {
  out_ = routing;
  const int32_t moe = layer >= 0 && static_cast<size_t>(layer) < moe_index_.size()
                          ? moe_index_[static_cast<size_t>(layer)]
                          : -1;
  if (moe < 0 || current_ < 0 || routing.top_k != trace_.top_k) return out_;
  const TraceRequest& recorded = trace_.requests[static_cast<size_t>(current_)];
  const int64_t k = routing.top_k;
  for (int64_t t = 0; t < routing.n_tokens; ++t) {
    const int64_t token = (first_position_ + t) % recorded.n_tokens;
    const int16_t* experts =
        recorded.experts.data() + (token * trace_.n_layers + moe) * trace_.top_k;
    for (int64_t j = 0; j < k; ++j) out_.expert_ids[static_cast<size_t>(t * k + j)] = experts[j];
  }
  return out_;
}

const std::string& RoutingReplay::current_origin() const {
  static const std::string kNone;
  if (current_ < 0) return kNone;
  return trace_.origins[static_cast<size_t>(trace_.requests[static_cast<size_t>(current_)].origin)];
}

}  // namespace dancemoe::node
