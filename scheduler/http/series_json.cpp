#include "scheduler/http/series_json.h"

#include <algorithm>
#include <cmath>

namespace dancemoe::scheduler {
namespace {

using nlohmann::ordered_json;

ordered_json ratio_or_null(double num, double den) {
  return den > 0 ? ordered_json(num / den) : ordered_json(nullptr);
}

}  // namespace

store::SeriesRange series_range(int64_t now_ms, double window_s, int32_t points) {
  store::SeriesRange r;
  r.n_buckets = std::max(points, 1);
  const double step = std::ceil(window_s * 1000.0 / r.n_buckets);
  r.step_ms = std::max<int64_t>(static_cast<int64_t>(step), 1);
  const int64_t end = (now_ms / r.step_ms + 1) * r.step_ms;  // the current bucket included
  r.from_ms = end - r.step_ms * r.n_buckets;
  return r;
}

ordered_json series_json(const store::ClusterSeries& s, int64_t now_ms) {
  const size_t n = static_cast<size_t>(s.range.n_buckets);
  ordered_json nodes = ordered_json::array();
  std::vector<uint64_t> remote_bytes(n, 0);
  for (const auto& [id, node] : s.nodes) {
    ordered_json ratio = ordered_json::array();
    for (size_t i = 0; i < n; ++i) {
      ratio.push_back(ratio_or_null(static_cast<double>(node.local_hits[i]),
                                    static_cast<double>(node.activations[i])));
      remote_bytes[i] += node.remote_bytes[i];
    }
    nodes.push_back({{"id", id},
                     {"local_hit_ratio", ratio},
                     {"activations", node.activations},
                     {"tokens", node.tokens},
                     {"requests", node.requests},
                     {"remote_calls", node.remote_calls},
                     {"remote_bytes", node.remote_bytes}});
  }
  ordered_json peers = ordered_json::array();
  for (const auto& [id, peer] : s.peers) {
    ordered_json mean = ordered_json::array();
    for (size_t i = 0; i < n; ++i) {
      mean.push_back(ratio_or_null(peer.latency_sum_us[i], static_cast<double>(peer.calls[i])));
    }
    peers.push_back({{"id", id}, {"calls", peer.calls}, {"mean_latency_us", mean}});
  }
  ordered_json placements = ordered_json::array();
  for (const store::PlacementMark& p : s.placements) {
    placements.push_back({{"version", p.version},
                          {"committed_ms", p.committed_ms},
                          {"policy", p.policy},
                          {"trigger", p.trigger}});
  }
  return {{"from_ms", s.range.from_ms},
          {"step_ms", s.range.step_ms},
          {"points", s.range.n_buckets},
          {"now_ms", now_ms},
          {"nodes", nodes},
          {"peers", peers},
          {"bytes_moved",
           {{"remote_call_bytes", remote_bytes}, {"migration_bytes", s.migration_bytes}}},
          {"placements", placements}};
}

ordered_json heat_json(const std::map<std::string, std::vector<double>>& counts,
                       const ModelInfo& model, int64_t since_ms, std::optional<uint64_t> version) {
  const size_t n_experts = static_cast<size_t>(model.n_experts);
  // [layer][expert] of one node's flat vector (index.flat order).
  auto grid = [&](const std::vector<double>& flat, double* sum) {
    ordered_json rows = ordered_json::array();
    for (int32_t layer : model.moe_layers) {
      std::vector<uint64_t> row(n_experts, 0);
      for (size_t e = 0; e < n_experts; ++e) {
        const int32_t x = model.flat(static_cast<uint32_t>(layer), static_cast<uint32_t>(e));
        if (x >= 0 && static_cast<size_t>(x) < flat.size()) {
          row[e] = static_cast<uint64_t>(flat[static_cast<size_t>(x)]);
          *sum += flat[static_cast<size_t>(x)];
        }
      }
      rows.push_back(row);
    }
    return rows;
  };
  std::vector<double> all(static_cast<size_t>(model.index.n_total), 0.0);
  ordered_json nodes = ordered_json::array();
  for (const auto& [id, flat] : counts) {
    double sum = 0;
    ordered_json rows = grid(flat, &sum);
    for (size_t i = 0; i < all.size() && i < flat.size(); ++i) all[i] += flat[i];
    nodes.push_back({{"id", id}, {"total", static_cast<uint64_t>(sum)}, {"counts", rows}});
  }
  double total = 0;
  ordered_json total_rows = grid(all, &total);
  return {{"since_ms", since_ms},
          {"version", version ? ordered_json(*version) : ordered_json(nullptr)},
          {"experts_per_layer", model.n_experts},
          {"layers", model.moe_layers},
          {"nodes", nodes},
          {"total", total_rows}};
}

}  // namespace dancemoe::scheduler
