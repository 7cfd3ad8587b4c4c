#include "scheduler/sim/workload.h"

#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "common/placement/coactivation.h"
#include "common/placement/routing_trace.h"
#include "scheduler/placement/synthetic.h"

namespace dancemoe::sim {
namespace {

// The task a node runs at time t: its configured task, then the latest shift.
std::string task_at(const SimConfig& config, int32_t node, double t) {
  std::string task = config.nodes[node].task;
  double latest = -1.0;
  for (const WorkloadShift& shift : config.shifts) {
    if (shift.node == config.nodes[node].id && shift.at_s <= t && shift.at_s >= latest) {
      task = shift.task;
      latest = shift.at_s;
    }
  }
  return task;
}

// Cumulative distributions per task and layer for synthetic routing.
struct SyntheticRouter {
  std::vector<std::vector<std::vector<double>>> cdf;  // [task][layer][expert]
  std::vector<std::vector<std::vector<double>>> probability;

  void route(int32_t task, const SimModel& model, std::mt19937_64& rng, int16_t* out) const {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int32_t l = 0; l < model.n_layers; ++l) {
      const std::vector<double>& c = cdf[task][l];
      int16_t* slot = out + static_cast<size_t>(l) * model.top_k;
      for (int32_t j = 0; j < model.top_k; ++j) {
        while (true) {
          const double u = unit(rng) * c.back();
          int16_t e = static_cast<int16_t>(std::upper_bound(c.begin(), c.end(), u) - c.begin());
          e = std::min<int16_t>(e, static_cast<int16_t>(model.n_experts - 1));
          if (std::find(slot, slot + j, e) == slot + j) {
            slot[j] = e;
            break;
          }
        }
      }
    }
  }
};

SyntheticRouter make_router(const SimConfig& config) {
  const SimModel& m = config.model;
  placement::ModelShape shape(std::vector<placement::LayerShape>(
      m.n_layers, placement::LayerShape{m.n_experts, m.expert_bytes}));
  placement::RoutingProfileSpec spec;
  spec.n_tasks = config.synthetic.n_tasks;
  spec.zipf_min = config.synthetic.zipf_min;
  spec.zipf_max = config.synthetic.zipf_max;
  spec.shared_ranking = config.synthetic.shared_ranking;
  spec.seed = config.seed * 7919u + 17u;
  SyntheticRouter router;
  router.probability = placement::make_routing_profile(shape, spec).probability;
  router.cdf = router.probability;
  for (auto& task : router.cdf) {
    for (auto& layer : task) {
      for (size_t e = 1; e < layer.size(); ++e) layer[e] += layer[e - 1];
    }
  }
  return router;
}

// Replay pools and calibration counts per trace origin.
struct TracePools {
  RoutingTrace trace;
  std::vector<std::vector<int32_t>> replay;      // [origin] -> request indices
  std::vector<std::vector<double>> calibration;  // [origin][layer * n_experts + expert]
  std::vector<CoActivationCounter> pairs;        // [origin], over the calibration part
};

// Feeds one token's routing (every layer) to a counter.
void count_token(const SimModel& m, const int16_t* experts, CoActivationCounter* counter) {
  std::vector<int32_t> ids(static_cast<size_t>(m.top_k));
  for (int32_t l = 0; l < m.n_layers; ++l) {
    for (int32_t j = 0; j < m.top_k; ++j) ids[j] = experts[static_cast<size_t>(l) * m.top_k + j];
    counter->add_token(l, ids);
  }
}

Result<TracePools> load_trace(const SimConfig& config) {
  TracePools pools;
  DMOE_ASSIGN_OR_RETURN(pools.trace, read_routing_trace(config.trace.path));
  const RoutingTrace& t = pools.trace;
  const SimModel& m = config.model;
  if (t.n_layers != m.n_layers || t.top_k != m.top_k || t.max_expert >= m.n_experts) {
    return invalid_argument(config.trace.path.string() + ": the trace has " +
                            std::to_string(t.n_layers) + " layers, top-" + std::to_string(t.top_k) +
                            ", expert ids up to " + std::to_string(t.max_expert) +
                            "; the model has " + std::to_string(m.n_layers) + " layers, top-" +
                            std::to_string(m.top_k) + ", " + std::to_string(m.n_experts) +
                            " experts per layer");
  }
  const size_t n_origins = t.origins.size();
  std::vector<std::vector<int32_t>> by_origin(n_origins);
  for (size_t i = 0; i < t.requests.size(); ++i) {
    by_origin[t.requests[i].origin].push_back(static_cast<int32_t>(i));  // already in id order
  }
  pools.replay.resize(n_origins);
  pools.calibration.assign(n_origins,
                           std::vector<double>(static_cast<size_t>(m.n_layers) * m.n_experts, 0));
  pools.pairs.assign(n_origins, CoActivationCounter(std::vector<int32_t>(m.n_layers, m.n_experts)));
  for (size_t o = 0; o < n_origins; ++o) {
    const size_t n_cal =
        static_cast<size_t>(config.trace.calibration_fraction * by_origin[o].size());
    for (size_t i = 0; i < by_origin[o].size(); ++i) {
      const TraceRequest& r = t.requests[by_origin[o][i]];
      if (i >= n_cal) {
        pools.replay[o].push_back(by_origin[o][i]);
        continue;
      }
      for (int32_t tok = 0; tok < r.n_tokens; ++tok) {
        count_token(m, r.experts.data() + static_cast<size_t>(tok) * m.n_layers * m.top_k,
                    &pools.pairs[o]);
        for (int32_t l = 0; l < m.n_layers; ++l) {
          for (int32_t j = 0; j < m.top_k; ++j) {
            const int16_t e = r.experts[(static_cast<size_t>(tok) * m.n_layers + l) * m.top_k + j];
            pools.calibration[o][static_cast<size_t>(l) * m.n_experts + e] += 1;
          }
        }
      }
    }
  }
  return pools;
}

// Every task a node or a shift names must be an origin of the trace with
// requests left to replay after calibration.
Status check_trace_origins(const SimConfig& config, const TracePools& pools) {
  auto check = [&](const std::string& mixture, const std::string& where) -> Status {
    for (const std::string& task : task_components(mixture)) {
      const int32_t o = pools.trace.origin_index(task);
      if (o < 0) {
        return invalid_argument(where + ": task '" + task + "' is not an origin of the trace " +
                                config.trace.path.string());
      }
      if (pools.replay[o].empty()) {
        return invalid_argument(where + ": origin '" + task +
                                "' has no requests left to replay after calibration");
      }
    }
    return Status::ok();
  };
  for (const SimNode& node : config.nodes) {
    DMOE_RETURN_IF_ERROR(check(node.task, "node '" + node.id + "'"));
  }
  for (const WorkloadShift& shift : config.shifts) {
    DMOE_RETURN_IF_ERROR(check(shift.task, "shift of node '" + shift.node + "'"));
  }
  return Status::ok();
}

// Poisson arrivals per node; each request replays a trace request of its
// task or draws synthetic routings.
std::vector<SimRequest> generate_requests(const SimConfig& config, const SyntheticRouter& router,
                                          const TracePools& pools) {
  const SimModel& m = config.model;
  const size_t per_token = static_cast<size_t>(m.n_layers) * m.top_k;
  std::vector<SimRequest> requests;
  for (int32_t n = 0; n < static_cast<int32_t>(config.nodes.size()); ++n) {
    const double rate = config.nodes[n].arrival_rate_per_s;
    std::mt19937_64 rng(static_cast<uint64_t>(config.seed) * 1000003u + static_cast<uint64_t>(n));
    if (rate <= 0) continue;
    std::exponential_distribution<double> gap(rate);
    double t = 0.0;
    while (true) {
      t += gap(rng);
      if (t >= config.duration_s) break;
      SimRequest request;
      request.arrival_s = t;
      request.node = n;
      // A mixture draws one of its tasks per request.
      const std::vector<std::string> parts = task_components(task_at(config, n, t));
      const std::string& task =
          parts.size() == 1
              ? parts[0]
              : parts[std::uniform_int_distribution<size_t>(0, parts.size() - 1)(rng)];
      if (config.trace_workload) {
        const auto& pool = pools.replay[pools.trace.origin_index(task)];
        const TraceRequest& replay =
            pools.trace
                .requests[pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)]];
        request.n_tokens = replay.n_tokens;
        request.experts = replay.experts;
      } else {
        request.n_tokens = config.synthetic.tokens_per_request;
        request.experts.resize(per_token * request.n_tokens);
        const int32_t task_index = std::stoi(task);
        for (int32_t tok = 0; tok < request.n_tokens; ++tok) {
          router.route(task_index, m, rng, request.experts.data() + per_token * tok);
        }
      }
      requests.push_back(std::move(request));
    }
  }
  return requests;
}

// Per node, the expected counts a profiling run would see; the profile of a
// mixture is the mean of its components' profiles.
std::vector<std::vector<double>> profiles(const SimConfig& config, const SyntheticRouter& router,
                                          const TracePools& pools) {
  const SimModel& m = config.model;
  std::vector<std::vector<double>> out;
  for (const SimNode& node : config.nodes) {
    const std::vector<std::string> parts = task_components(node.task);
    std::vector<double> counts(static_cast<size_t>(m.n_layers) * m.n_experts, 0.0);
    for (const std::string& task : parts) {
      for (int32_t l = 0; l < m.n_layers; ++l) {
        for (int32_t e = 0; e < m.n_experts; ++e) {
          const size_t i = static_cast<size_t>(l) * m.n_experts + e;
          counts[i] += (config.trace_workload ? pools.calibration[pools.trace.origin_index(task)][i]
                                              : config.synthetic.profile_tokens * m.top_k *
                                                    router.probability[std::stoi(task)][l][e]) /
                       static_cast<double>(parts.size());
        }
      }
    }
    out.push_back(std::move(counts));
  }
  return out;
}

// Co-activation counts of each synthetic task over `profile_tokens` tokens
// drawn from it (its own stream, so the requests' draws do not change).
std::vector<CoActivationCounter> synthetic_pairs(const SimConfig& config,
                                                 const SyntheticRouter& router) {
  const SimModel& m = config.model;
  std::vector<CoActivationCounter> out;
  std::vector<int16_t> token(static_cast<size_t>(m.n_layers) * m.top_k);
  for (int32_t task = 0; task < config.synthetic.n_tasks; ++task) {
    out.emplace_back(std::vector<int32_t>(m.n_layers, m.n_experts));
    std::mt19937_64 rng(static_cast<uint64_t>(config.seed) * 7777u + static_cast<uint64_t>(task));
    const auto n_tokens = static_cast<int64_t>(config.synthetic.profile_tokens);
    for (int64_t t = 0; t < n_tokens; ++t) {
      router.route(task, m, rng, token.data());
      count_token(m, token.data(), &out.back());
    }
  }
  return out;
}

// Per node, the mean of its tasks' reported pairs, as flat ids.
std::vector<std::vector<placement::PairCount>> pairs_per_node(
    const SimConfig& config, const std::vector<CoActivationCounter>& per_task,
    const std::function<int32_t(const std::string&)>& task_index) {
  const SimModel& m = config.model;
  std::vector<std::vector<placement::PairCount>> out;
  for (const SimNode& node : config.nodes) {
    const std::vector<std::string> parts = task_components(node.task);
    std::map<std::pair<int32_t, int32_t>, double> sum;
    for (const std::string& task : parts) {
      for (const CoActivationCounter::Pair& p :
           per_task[task_index(task)].top_pairs(config.placement.coactivation_pairs)) {
        sum[{p.layer * m.n_experts + p.a, p.layer * m.n_experts + p.b}] +=
            static_cast<double>(p.count) / static_cast<double>(parts.size());
      }
    }
    std::vector<placement::PairCount> pairs;
    for (const auto& [key, count] : sum) pairs.push_back({key.first, key.second, count});
    out.push_back(std::move(pairs));
  }
  return out;
}

}  // namespace

Workload Workload::from_requests(std::vector<SimRequest> requests,
                                 std::vector<std::vector<double>> profile,
                                 std::vector<std::vector<placement::PairCount>> profile_pairs) {
  Workload w;
  w.requests_ = std::move(requests);
  std::stable_sort(
      w.requests_.begin(), w.requests_.end(), [](const SimRequest& a, const SimRequest& b) {
        return a.arrival_s != b.arrival_s ? a.arrival_s < b.arrival_s : a.node < b.node;
      });
  for (const SimRequest& r : w.requests_) w.total_tokens_ += r.n_tokens;
  w.profile_ = std::move(profile);
  w.profile_pairs_ = std::move(profile_pairs);
  return w;
}

Result<Workload> Workload::create(const SimConfig& config) {
  DMOE_RETURN_IF_ERROR(validate_sim_config(config));
  SyntheticRouter router;
  TracePools pools;
  std::vector<std::vector<placement::PairCount>> pairs;
  if (config.trace_workload) {
    DMOE_ASSIGN_OR_RETURN(pools, load_trace(config));
    DMOE_RETURN_IF_ERROR(check_trace_origins(config, pools));
    pairs = pairs_per_node(config, pools.pairs,
                           [&](const std::string& task) { return pools.trace.origin_index(task); });
  } else {
    router = make_router(config);
    pairs = pairs_per_node(config, synthetic_pairs(config, router),
                           [](const std::string& task) { return std::stoi(task); });
  }
  return from_requests(generate_requests(config, router, pools), profiles(config, router, pools),
                       std::move(pairs));
}

}  // namespace dancemoe::sim
