// bench_placement: how fast `optimal` is on realistic shapes, and how every
// policy compares with it on the proxy cost.
//
//   DeepSeek-V3 shape: 58 MoE layers x 256 experts (44 MB FP8 experts),
//                      64 nodes with 1-8 GPUs and unequal memory (1-5 % of
//                      the experts each, about 1.9x the model in all)
//   OLMoE shape:       16 MoE layers x 64 experts (12.6 MB), 8 nodes with
//                      15-40 % of the experts each
// Activations: synthetic Zipf routing (scheduler/placement/synthetic.h), one
// task type per node group, fixed seeds. Run in Release:
//   build/release/tests/bench_placement [--repeat N]
// Prints the median and minimum solve time of each policy (validation and
// packing included) and its proxy cost relative to `optimal`. Targets
// (issue 3): optimal < 1 s on the DeepSeek-V3 shape, < 20 ms on OLMoE.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "scheduler/placement/costs.h"
#include "scheduler/placement/policy.h"
#include "scheduler/placement/synthetic.h"

namespace {

using dancemoe::placement::LayerShape;
using dancemoe::placement::Problem;
using dancemoe::placement::SyntheticProblemSpec;

Problem deepseek_v3_problem() {
  SyntheticProblemSpec spec;
  spec.layers.assign(58, LayerShape{256, 3ull * 7168 * 2048});
  spec.n_nodes = 64;
  spec.devices_min = 1;
  spec.devices_max = 8;
  spec.memory_fraction_min = 0.01;
  spec.memory_fraction_max = 0.05;
  spec.routing.n_tasks = 8;
  spec.routing.shared_ranking = 0.5;
  spec.routing.seed = 31;
  spec.top_k = 8;
  spec.tokens_per_node = 20000;
  spec.seed = 3;
  return make_synthetic_problem(spec);
}

Problem olmoe_problem() {
  SyntheticProblemSpec spec;
  spec.layers.assign(16, LayerShape{64, 12582912});
  spec.n_nodes = 8;
  spec.devices_min = 1;
  spec.devices_max = 2;
  spec.memory_fraction_min = 0.15;
  spec.memory_fraction_max = 0.40;
  spec.routing.n_tasks = 4;
  spec.routing.shared_ranking = 0.3;
  spec.routing.seed = 17;
  spec.tokens_per_node = 20000;
  spec.seed = 5;
  return make_synthetic_problem(spec);
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct Timing {
  double median_ms = 0.0;
  double min_ms = 0.0;
  double median_cpu_ms = 0.0;  // thread CPU time: less sensitive to a loaded machine
  double proxy_cost = 0.0;
  std::string method;
};

Timing time_policy(const std::string& policy, const Problem& problem, int repeat) {
  std::vector<double> ms, cpu;
  Timing timing;
  for (int i = 0; i < repeat; ++i) {
    const double c0 = thread_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    auto placement = dancemoe::placement::solve(policy, problem);
    const auto t1 = std::chrono::steady_clock::now();
    cpu.push_back(thread_cpu_ms() - c0);
    if (!placement.is_ok()) {
      std::fprintf(stderr, "%s failed: %s\n", policy.c_str(),
                   placement.status().to_string().c_str());
      std::exit(1);
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    timing.proxy_cost = dancemoe::placement::proxy_cost_activations(problem, *placement);
    timing.method = placement->method;
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu.begin(), cpu.end());
  timing.median_cpu_ms = cpu[cpu.size() / 2];
  timing.median_ms = ms[ms.size() / 2];
  timing.min_ms = ms.front();
  return timing;
}

void run(const char* title, const Problem& problem, int repeat, double target_ms) {
  int64_t slots = 0;
  for (const auto& node : problem.cluster.nodes) {
    for (const auto& device : node.devices) {
      slots += static_cast<int64_t>(device.expert_budget_bytes /
                                    problem.model.layers().front().expert_bytes);
    }
  }
  std::printf("\n== %s: %d layers x %d experts = %d experts, %zu nodes, %lld slots (%.2fx)\n",
              title, problem.model.n_layers(), problem.model.n_experts(0),
              problem.model.n_experts_total(), problem.cluster.nodes.size(),
              static_cast<long long>(slots),
              static_cast<double>(slots) / problem.model.n_experts_total());
  const Timing optimal = time_policy("optimal", problem, repeat);
  std::printf("%-18s %10s %10s %10s %14s %12s\n", "policy", "median_ms", "min_ms", "cpu_ms",
              "proxy_cost", "vs_optimal");
  for (const auto& info : dancemoe::placement::all_policies()) {
    const std::string name(info.name);
    const Timing t = name == "optimal" ? optimal : time_policy(name, problem, repeat);
    std::printf("%-18s %10.2f %10.2f %10.2f %14.0f %11.4fx\n", name.c_str(), t.median_ms, t.min_ms,
                t.median_cpu_ms, t.proxy_cost, t.proxy_cost / optimal.proxy_cost);
  }
  std::printf("optimal: %s\n", optimal.method.c_str());
  std::printf("optimal median %.2f ms (target < %.0f ms): %s\n", optimal.median_ms, target_ms,
              optimal.median_ms < target_ms ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::atoi(argv[++i]);
  }
  repeat = std::max(repeat, 1);
  run("OLMoE shape", olmoe_problem(), repeat * 4, 20.0);
  run("DeepSeek-V3 shape", deepseek_v3_problem(), repeat, 1000.0);
  return 0;
}
