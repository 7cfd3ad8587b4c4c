#include "scheduler/sim/study.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "scheduler/sim/svg_chart.h"
#include "scheduler/sim/workload.h"

namespace dancemoe::sim {
namespace {

std::string csv_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

Status write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path);
  if (!file) return unavailable(path.string() + ": cannot open for writing");
  file << text;
  file.flush();
  if (!file) return unavailable(path.string() + ": write failed");
  return Status::ok();
}

Result<StudyResult> run_study(const SimConfig& config, int jobs) {
  DMOE_ASSIGN_OR_RETURN(Workload workload, Workload::create(config));
  StudyResult study;
  study.config = config;
  study.n_requests = static_cast<int64_t>(workload.requests().size());
  study.n_tokens = workload.total_tokens();
  const size_t n = config.placement.policies.size();
  std::vector<Result<SimResult>> results(n, Status(StatusCode::kInternal, "not run"));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      results[i] = simulate(config, workload, config.placement.policies[i]);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::max(jobs, 1); ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < n; ++i) {
    if (!results[i].is_ok()) {
      return results[i].status().with_context("policy " + config.placement.policies[i]);
    }
    study.runs.push_back(std::move(*results[i]));
  }
  return study;
}

Status write_study(const StudyResult& study, const std::filesystem::path& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return unavailable(out_dir.string() + ": cannot create: " + ec.message());

  std::ostringstream summary, timeline, replacements;
  summary << "policy,node,requests,mean_latency_s,p50_latency_s,p99_latency_s,local_ratio,"
             "local_step_ratio,messages_per_step,migrations,experts_moved,bytes_moved,"
             "initial_local_hit_ratio,tokens,token_mean_s,token_p50_s,token_p99_s,remote_bytes\n";
  timeline << "policy,t_s,local_ratio,mean_latency_s,completed,local_step_ratio\n";
  replacements << "policy,t_s,cost_current_s,cost_new_s,migration_s,adopt,committed_at_s,"
                  "experts_added,bytes\n";
  for (const SimResult& run : study.runs) {
    auto row = [&](const std::string& node, const LatencyStats& s) {
      summary << run.policy << "," << node << "," << s.requests << "," << csv_number(s.mean_s)
              << "," << csv_number(s.p50_s) << "," << csv_number(s.p99_s) << ","
              << csv_number(s.local_ratio()) << "," << csv_number(s.local_step_ratio()) << ","
              << csv_number(s.messages_per_step()) << "," << run.migrations << ","
              << run.experts_moved << "," << run.bytes_moved << ","
              << csv_number(run.initial_local_hit_ratio) << "," << s.tokens << ","
              << csv_number(s.token_mean_s) << "," << csv_number(s.token_p50_s) << ","
              << csv_number(s.token_p99_s) << "," << s.remote_bytes << "\n";
    };
    for (size_t n = 0; n < run.nodes.size(); ++n) row(run.node_ids[n], run.nodes[n]);
    row("all", run.overall);
    for (const TimelinePoint& p : run.timeline) {
      timeline << run.policy << "," << csv_number(p.t_s) << "," << csv_number(p.local_ratio) << ","
               << csv_number(p.mean_latency_s) << "," << p.completed << ","
               << csv_number(p.local_step_ratio) << "\n";
    }
    for (const ReplacementRecord& r : run.replacements) {
      replacements << run.policy << "," << csv_number(r.t_s) << "," << csv_number(r.cost_current_s)
                   << "," << csv_number(r.cost_new_s) << "," << csv_number(r.migration_s) << ","
                   << (r.adopt ? 1 : 0) << "," << csv_number(r.committed_at_s) << ","
                   << r.experts_added << "," << r.bytes << "\n";
    }
  }
  DMOE_RETURN_IF_ERROR(write_text_file(out_dir / "summary.csv", summary.str()));
  DMOE_RETURN_IF_ERROR(write_text_file(out_dir / "timeline.csv", timeline.str()));
  DMOE_RETURN_IF_ERROR(write_text_file(out_dir / "replacements.csv", replacements.str()));

  const std::string& name = study.config.name;
  BarChart latency;
  latency.title = name + ": request latency";
  latency.y_label = "seconds";
  latency.categories = {"mean", "p99"};
  for (const SimResult& run : study.runs) {
    latency.series.push_back({run.policy, {}, {run.overall.mean_s, run.overall.p99_s}});
  }
  DMOE_RETURN_IF_ERROR(write_text_file(out_dir / "latency.svg", render_bar_chart(latency)));

  BarChart per_node;
  per_node.title = name + ": mean latency per node";
  per_node.y_label = "seconds";
  if (!study.runs.empty()) per_node.categories = study.runs.front().node_ids;
  for (const SimResult& run : study.runs) {
    ChartSeries series{run.policy, {}, {}};
    for (const LatencyStats& s : run.nodes) series.y.push_back(s.mean_s);
    per_node.series.push_back(std::move(series));
  }
  DMOE_RETURN_IF_ERROR(write_text_file(out_dir / "node_latency.svg", render_bar_chart(per_node)));

  LineChart local;
  local.title = name + ": local compute ratio over time";
  local.x_label = "time (s)";
  local.y_label = "share of expert activations served locally";
  local.y_max = 1.0;
  for (const SimResult& run : study.runs) {
    ChartSeries series{run.policy, {}, {}};
    for (const TimelinePoint& p : run.timeline) {
      series.x.push_back(p.t_s + study.config.timeline_bucket_s / 2);
      series.y.push_back(p.local_ratio);
    }
    local.series.push_back(std::move(series));
  }
  DMOE_RETURN_IF_ERROR(write_text_file(out_dir / "local_ratio.svg", render_line_chart(local)));

  LineChart steps;
  steps.title = name + ": fully-local steps over time";
  steps.x_label = "time (s)";
  steps.y_label = "share of (token, layer) steps with every expert local";
  steps.y_max = 1.0;
  for (const SimResult& run : study.runs) {
    ChartSeries series{run.policy, {}, {}};
    for (const TimelinePoint& p : run.timeline) {
      series.x.push_back(p.t_s + study.config.timeline_bucket_s / 2);
      series.y.push_back(p.local_step_ratio);
    }
    steps.series.push_back(std::move(series));
  }
  return write_text_file(out_dir / "local_steps.svg", render_line_chart(steps));
}

std::string format_summary(const StudyResult& study) {
  std::ostringstream s;
  char line[256];
  std::snprintf(line, sizeof(line), "%s: %lld requests, %lld tokens\n", study.config.name.c_str(),
                static_cast<long long>(study.n_requests), static_cast<long long>(study.n_tokens));
  s << line;
  std::snprintf(line, sizeof(line), "%-18s %9s %9s %9s %7s %7s %6s %5s %9s %10s\n", "policy",
                "mean_s", "p99_s", "token_ms", "local", "l_step", "msg/st", "migr", "moved_MB",
                "events");
  s << line;
  for (const SimResult& run : study.runs) {
    std::snprintf(
        line, sizeof(line), "%-18s %9.4f %9.4f %9.3f %7.4f %7.4f %6.3f %5lld %9.1f %10lld\n",
        run.policy.c_str(), run.overall.mean_s, run.overall.p99_s, run.overall.token_mean_s * 1e3,
        run.overall.local_ratio(), run.overall.local_step_ratio(), run.overall.messages_per_step(),
        static_cast<long long>(run.migrations), static_cast<double>(run.bytes_moved) / 1e6,
        static_cast<long long>(run.events));
    s << line;
  }
  for (const SimResult& run : study.runs) s << run.policy << ": " << run.method << "\n";
  return s.str();
}

}  // namespace dancemoe::sim
