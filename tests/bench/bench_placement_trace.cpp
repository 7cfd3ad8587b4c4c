// bench_placement_trace: every policy on the real OLMoE routing trace
// (../shared/traces/olmoe_1b7b_domains, 4 task domains), without simulation:
// local-hit ratio and proxy cost relative to `optimal`.
//
//   in-sample  statistics = counts_by_domain.csv (all 20 prompts per domain),
//              evaluated on the same counts (the proxy problem itself);
//   held-out   statistics = the first half of each domain's prompts
//              (tokens_sample.csv, by sequence id), evaluated on the second
//              half: does the placement generalise to new prompts? The
//              "oracle" row is `optimal` solved on the held-out half itself.
// Layouts: four nodes of one GPU, one domain each, at 30/50/70 % of the
// experts per GPU; and the paper's three servers with 1, 1 and 2 GPUs
// (general, coding, math) at 30/70 % per GPU.
//
//   build/release/tests/bench_placement_trace [--trace-dir DIR] [--out DIR]
// (run from the repository root; DIR defaults to ../shared/traces/olmoe_1b7b_domains).
// Writes trace_static.csv and SVG bar charts into --out when given.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/placement/routing_trace.h"
#include "scheduler/placement/costs.h"
#include "scheduler/placement/policy.h"
#include "scheduler/sim/study.h"
#include "scheduler/sim/svg_chart.h"

namespace {

using dancemoe::placement::Placement;
using dancemoe::placement::Problem;
namespace pl = dancemoe::placement;
namespace sim = dancemoe::sim;
using dancemoe::RoutingTrace;
using dancemoe::TraceRequest;

constexpr int kLayers = 16, kExperts = 64;
constexpr uint64_t kExpertBytes = 12582912;

struct Layout {
  std::string name;
  std::vector<std::string> domains;  // one node each
  std::vector<int> gpus;
  double fraction;  // of all experts' bytes, per GPU
};

Problem make_problem(const Layout& layout, const std::vector<std::vector<double>>& counts) {
  Problem p;
  p.model =
      pl::ModelShape(std::vector<pl::LayerShape>(kLayers, pl::LayerShape{kExperts, kExpertBytes}));
  const double all = static_cast<double>(p.model.total_expert_bytes());
  for (size_t n = 0; n < layout.domains.size(); ++n) {
    pl::Node node;
    node.id = layout.domains[n];
    node.remote_penalty_s = 0.004;
    for (int g = 0; g < layout.gpus[n]; ++g) {
      node.devices.push_back(
          pl::Device{"gpu" + std::to_string(g), static_cast<uint64_t>(all * layout.fraction), 2e9});
    }
    p.cluster.nodes.push_back(node);
  }
  p.activations.counts = counts;
  return p;
}

// Per-domain counts of a set of trace requests.
std::map<std::string, std::vector<double>> count_requests(const RoutingTrace& trace,
                                                          bool first_half) {
  std::map<std::string, std::vector<TraceRequest>> by_domain;
  for (const TraceRequest& r : trace.requests) by_domain[trace.origins[r.origin]].push_back(r);
  std::map<std::string, std::vector<double>> counts;
  for (auto& [domain, requests] : by_domain) {
    std::vector<double>& c = counts[domain];
    c.assign(kLayers * kExperts, 0.0);
    const size_t half = requests.size() / 2;
    for (size_t i = first_half ? 0 : half; i < (first_half ? half : requests.size()); ++i) {
      const TraceRequest& r = requests[i];
      for (int32_t t = 0; t < r.n_tokens; ++t) {
        for (int l = 0; l < kLayers; ++l) {
          for (int j = 0; j < trace.top_k; ++j) {
            c[l * kExperts + r.experts[(t * kLayers + l) * trace.top_k + j]] += 1;
          }
        }
      }
    }
  }
  return counts;
}

std::vector<std::vector<double>> rows_for(const Layout& layout,
                                          const std::map<std::string, std::vector<double>>& c) {
  std::vector<std::vector<double>> rows;
  for (const std::string& d : layout.domains) rows.push_back(c.at(d));
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace_dir = "../shared/traces/olmoe_1b7b_domains", out_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--trace-dir") == 0 && i + 1 < argc) trace_dir = argv[++i];
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) out_dir = argv[++i];
  }
  auto counts_table =
      dancemoe::read_counts_csv(trace_dir + "/counts_by_domain.csv", kLayers, kExperts);
  auto trace = dancemoe::read_routing_trace(trace_dir + "/tokens_sample.csv");
  if (!counts_table.is_ok() || !trace.is_ok()) {
    std::fprintf(stderr, "bench_placement_trace: cannot read the shared trace in %s: %s %s\n",
                 trace_dir.c_str(), counts_table.status().to_string().c_str(),
                 trace.status().to_string().c_str());
    return 2;
  }
  std::map<std::string, std::vector<double>> all_counts;
  for (size_t o = 0; o < counts_table->origins.size(); ++o) {
    all_counts[counts_table->origins[o]] = counts_table->counts[o];
  }
  const auto calibration = count_requests(*trace, true);
  const auto held_out = count_requests(*trace, false);

  const std::vector<std::string> four = {"general", "coding", "math", "reasoning"};
  std::vector<Layout> layouts;
  for (double f : {0.3, 0.5, 0.7}) {
    layouts.push_back(
        {"4x1 GPU, " + std::to_string(static_cast<int>(f * 100)) + "%", four, {1, 1, 1, 1}, f});
  }
  for (double f : {0.3, 0.7}) {
    layouts.push_back({"1/1/2 GPU, " + std::to_string(static_cast<int>(f * 100)) + "%",
                       {"general", "coding", "math"},
                       {1, 1, 2},
                       f});
  }

  std::ostringstream csv;
  csv << "layout,policy,in_sample_local_hit,in_sample_proxy_cost,in_sample_vs_optimal,"
         "held_out_local_hit,solve_ms\n";
  std::vector<std::string> names;
  for (const auto& info : pl::all_policies()) names.emplace_back(info.name);
  std::map<std::string, std::vector<double>> in_hit, out_hit, vs_opt;
  std::vector<std::string> categories;
  for (const Layout& layout : layouts) {
    categories.push_back(layout.name);
    const Problem in_sample = make_problem(layout, rows_for(layout, all_counts));
    const Problem train = make_problem(layout, rows_for(layout, calibration));
    const Problem test = make_problem(layout, rows_for(layout, held_out));
    const double optimal_cost =
        pl::proxy_cost_activations(in_sample, *pl::solve("optimal", in_sample));
    std::printf("\n== %s\n%-18s %12s %12s %10s %12s %9s\n", layout.name.c_str(), "policy",
                "local_hit", "proxy_cost", "vs_opt", "held_out_hit", "solve_ms");
    for (const std::string& name : names) {
      const auto t0 = std::chrono::steady_clock::now();
      auto placed = pl::solve(name, in_sample);
      const auto t1 = std::chrono::steady_clock::now();
      auto trained = pl::solve(name, train);
      if (!placed.is_ok() || !trained.is_ok()) {
        std::fprintf(stderr, "%s failed on %s\n", name.c_str(), layout.name.c_str());
        return 1;
      }
      const pl::PlacementCosts c = pl::evaluate_costs(in_sample, *placed);
      const double held = pl::local_hit_ratio(test, *trained);
      const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      std::printf("%-18s %12.4f %12.0f %9.4fx %12.4f %9.2f\n", name.c_str(), c.local_hit_ratio,
                  c.proxy_cost, c.proxy_cost / optimal_cost, held, ms);
      csv << layout.name << "," << name << "," << c.local_hit_ratio << "," << c.proxy_cost << ","
          << c.proxy_cost / optimal_cost << "," << held << "," << ms << "\n";
      in_hit[name].push_back(c.local_hit_ratio);
      out_hit[name].push_back(held);
      vs_opt[name].push_back(c.proxy_cost / optimal_cost);
    }
    const double oracle = pl::local_hit_ratio(test, *pl::solve("optimal", test));
    std::printf("%-18s %12s %12s %10s %12.4f\n", "oracle (held-out)", "", "", "", oracle);
    csv << layout.name << ",oracle,,,," << oracle << ",\n";
  }
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    auto write_chart = [&](const std::string& file, const std::string& title,
                           const std::string& y_label,
                           const std::map<std::string, std::vector<double>>& values, bool log_y) {
      sim::BarChart chart;
      chart.log_y = log_y;
      chart.title = title;
      chart.y_label = y_label;
      chart.categories = categories;
      for (const std::string& name : names) chart.series.push_back({name, {}, values.at(name)});
      return sim::write_text_file(std::filesystem::path(out_dir) / file,
                                  sim::render_bar_chart(chart));
    };
    if (!sim::write_text_file(std::filesystem::path(out_dir) / "trace_static.csv", csv.str())
             .is_ok() ||
        !write_chart("trace_local_hit_in_sample.svg",
                     "OLMoE trace: local-hit ratio (statistics = evaluation prompts)",
                     "share of activations served locally", in_hit, false)
             .is_ok() ||
        !write_chart("trace_local_hit_held_out.svg",
                     "OLMoE trace: local-hit ratio on held-out prompts",
                     "share of activations served locally", out_hit, false)
             .is_ok() ||
        !write_chart("trace_proxy_vs_optimal.svg",
                     "OLMoE trace: proxy cost relative to optimal (1 = optimal, log scale)",
                     "remote activations / optimal's", vs_opt, true)
             .is_ok()) {
      std::fprintf(stderr, "bench_placement_trace: cannot write into %s\n", out_dir.c_str());
      return 1;
    }
    std::printf("\nwrote %s/trace_static.csv and 3 SVG charts\n", out_dir.c_str());
  }
  return 0;
}
