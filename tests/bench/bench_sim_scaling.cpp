// bench_sim_scaling: the simulator's scaling study (issue 3): clusters of 4
// to 256 GPUs on links of 100 to 1000 Mbit/s, every placement policy side by
// side, DeepSeek-V2-Lite shape (26 MoE layers x 64 experts, top-6), 30 % of
// the experts per GPU, servers with 1, 1, 2 GPUs in turn, 8 task types
// (server i runs task i % 8), Poisson arrivals of 0.3 requests/s per server,
// 16 decode tokens per request, static placement from a profile.
//
//   build/release/tests/bench_sim_scaling [--duration S] [--jobs N] [--out DIR]
// Prints one line per run and, with --out, writes scaling.csv and two SVG
// charts (latency against cluster size at 500 Mbit/s, against bandwidth at
// 64 GPUs). The grid is 4 sizes x 4 bandwidths x 6 policies (optimal-migration
// equals optimal without a current placement, so it is left out).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scheduler/sim/study.h"
#include "scheduler/sim/svg_chart.h"

namespace {

namespace sim = dancemoe::sim;

sim::SimConfig scaling_config(int gpus, double mbps, double duration_s) {
  sim::SimConfig c;
  c.name = std::to_string(gpus) + " GPUs, " + std::to_string(static_cast<int>(mbps)) + " Mbit/s";
  c.seed = 11;
  c.duration_s = duration_s;
  c.timeline_bucket_s = 10;
  c.model = sim::SimModel{26, 64, 6, 3ull * 2048 * 1408 * 2, 4096};
  c.link = sim::SimLink{mbps * 1e6 / 8, 0.001};
  const uint64_t model_bytes = c.model.expert_bytes * 26 * 64;
  const int pattern[3] = {1, 1, 2};
  int placed = 0;
  for (int i = 0; placed < gpus; ++i) {
    const int n_gpus = std::min(pattern[i % 3], gpus - placed);
    sim::SimNode node;
    node.id = "s";  // appended: GCC 12 at -O3 warns falsely (-Wrestrict) on "s" + ...
    node.id += std::to_string(i);
    node.task = std::to_string(i % 8);
    node.arrival_rate_per_s = 0.3;
    node.dense_s_per_layer = 2e-4;
    for (int g = 0; g < n_gpus; ++g) {
      node.devices.push_back(sim::SimDevice{
          "gpu" + std::to_string(g), static_cast<uint64_t>(0.3 * model_bytes), 2e9, 4e-5, 1e-6});
    }
    placed += n_gpus;
    c.nodes.push_back(node);
  }
  c.synthetic.n_tasks = 8;
  c.synthetic.tokens_per_request = 16;
  c.synthetic.zipf_min = 0.8;
  c.synthetic.zipf_max = 1.4;
  c.synthetic.shared_ranking = 0.3;
  c.placement.policies = {"uniform", "redundance", "smartmoe", "eplb", "dancemoe", "optimal"};
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  double duration_s = 60;
  int jobs = 1;
  std::string out_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--duration") == 0 && i + 1 < argc) duration_s = std::atof(argv[++i]);
    if (std::strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) jobs = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) out_dir = argv[++i];
  }
  const std::vector<int> sizes = {4, 16, 64, 256};
  const std::vector<double> bandwidths = {100, 250, 500, 1000};
  std::ostringstream csv;
  csv << "gpus,nodes,mbps,policy,requests,mean_latency_s,p99_latency_s,local_ratio,"
         "local_step_ratio,messages_per_step,events,wall_s\n";
  std::map<std::string, std::vector<double>> by_size, by_bandwidth;  // mean latency
  std::vector<std::string> policies;
  std::printf("%5s %5s %5s %-11s %9s %9s %7s %7s %9s\n", "gpus", "nodes", "Mbps", "policy",
              "mean_s", "p99_s", "local", "l_step", "wall_s");
  for (int gpus : sizes) {
    for (double mbps : bandwidths) {
      const sim::SimConfig config = scaling_config(gpus, mbps, duration_s);
      policies = config.placement.policies;
      const auto t0 = std::chrono::steady_clock::now();
      auto study = sim::run_study(config, jobs);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!study.is_ok()) {
        std::fprintf(stderr, "%s: %s\n", config.name.c_str(), study.status().to_string().c_str());
        return 1;
      }
      for (const sim::SimResult& run : study->runs) {
        const sim::LatencyStats& s = run.overall;
        std::printf("%5d %5zu %5.0f %-11s %9.4f %9.4f %7.4f %7.4f %9.2f\n", gpus,
                    config.nodes.size(), mbps, run.policy.c_str(), s.mean_s, s.p99_s,
                    s.local_ratio(), s.local_step_ratio(), wall / study->runs.size());
        csv << gpus << "," << config.nodes.size() << "," << mbps << "," << run.policy << ","
            << s.requests << "," << s.mean_s << "," << s.p99_s << "," << s.local_ratio() << ","
            << s.local_step_ratio() << "," << s.messages_per_step() << "," << run.events << ","
            << wall / study->runs.size() << "\n";
        if (mbps == 500) by_size[run.policy].push_back(s.mean_s);
        if (gpus == 64) by_bandwidth[run.policy].push_back(s.mean_s);
      }
      std::fflush(stdout);
    }
  }
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    sim::BarChart size_chart;
    size_chart.title = "Scaling: mean request latency against cluster size (500 Mbit/s)";
    size_chart.y_label = "seconds";
    for (int g : sizes) size_chart.categories.push_back(std::to_string(g) + " GPUs");
    sim::BarChart bw_chart;
    bw_chart.title = "Scaling: mean request latency against link bandwidth (64 GPUs)";
    bw_chart.y_label = "seconds";
    for (double b : bandwidths) {
      bw_chart.categories.push_back(std::to_string(static_cast<int>(b)) + " Mbit/s");
    }
    for (const std::string& p : policies) {
      size_chart.series.push_back({p, {}, by_size[p]});
      bw_chart.series.push_back({p, {}, by_bandwidth[p]});
    }
    const std::filesystem::path out(out_dir);
    if (!sim::write_text_file(out / "scaling.csv", csv.str()).is_ok() ||
        !sim::write_text_file(out / "scaling_size.svg", sim::render_bar_chart(size_chart))
             .is_ok() ||
        !sim::write_text_file(out / "scaling_bandwidth.svg", sim::render_bar_chart(bw_chart))
             .is_ok()) {
      std::fprintf(stderr, "bench_sim_scaling: cannot write into %s\n", out_dir.c_str());
      return 1;
    }
    std::printf("wrote %s/scaling.csv, scaling_size.svg, scaling_bandwidth.svg\n", out_dir.c_str());
  }
  return 0;
}
