// The JSON of the dashboard's history routes (http_endpoint.h), from the
// store's read-only queries (scheduler/store/series.h):
//
//   GET /api/series  {"from_ms", "step_ms", "points", "now_ms",
//                     "nodes": [{"id", "local_hit_ratio": [r|null per bucket],
//                                "activations", "tokens", "requests",
//                                "remote_calls", "remote_bytes": [...]}],
//                     "peers": [{"id", "calls": [...],
//                                "mean_latency_us": [us|null per bucket]}],
//                     "bytes_moved": {"remote_call_bytes": [...],
//                                     "migration_bytes": [...]},
//                     "placements": [{"version", "committed_ms", "policy",
//                                     "trigger"}]}
//   GET /api/heat    {"since_ms", "version", "experts_per_layer",
//                     "layers": [model layer of each row],
//                     "nodes": [{"id", "total", "counts": [[per expert] per layer]}],
//                     "total": [[per expert] per layer]}
//
// A ratio or mean is null for a bucket with nothing to divide. Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/daemon/model_info.h"
#include "scheduler/store/series.h"

namespace dancemoe::scheduler {

// The buckets of a window of `window_s` seconds ending now, `points` of
// them, aligned to whole steps so that successive refreshes share edges.
store::SeriesRange series_range(int64_t now_ms, double window_s, int32_t points);

nlohmann::ordered_json series_json(const store::ClusterSeries& series, int64_t now_ms);

nlohmann::ordered_json heat_json(const std::map<std::string, std::vector<double>>& counts,
                                 const ModelInfo& model, int64_t since_ms,
                                 std::optional<uint64_t> version);

}  // namespace dancemoe::scheduler
