// The runtime placement study (issue 17), by hand: a real scheduler and four
// nodes of unequal memory (45, 35, 30, 25 % of the experts) on emulated links
// (1 Gbit/s and 0.5 ms, 500 Mbit/s and 1 ms, 100 Mbit/s and 2 ms one-way,
// userspace relays: this kernel has no sch_netem), each node replaying one
// domain of the shared OLMoE trace (general, coding, math, reasoning); for
// each policy the per-token latency (mean, p50, p99), the share of
// fully-local steps and the bytes on the wire, before and after a workload
// shift (n2: coding -> math), then the simulator calibrated from these
// measurements on the same configuration, side by side. What one link runs
// is described in placement_study.h.
//
//   build/release/tests/bench_placement_runtime [--out docs/placement/runtime]
//       [--links 1gbit,500mbit,100mbit] [--policies uniform,eplb,...]
//       [--rounds 2] [--requests 3] [--tokens 32] [--profile 4] [--threads 1]
//       [--trace ../shared/traces/olmoe_1b7b_domains/tokens_sample.csv] [--model DIR]
//
// Writes runtime.csv (every phase), calibration.csv, summary.md (the tables of
// docs/placement-latency.md) and latency_<link>.svg, local_steps.svg,
// shift_<link>.svg into --out. The model (the `olmoe-shape` preset of make-model) is
// generated once under the build tree.
#include <cstdio>
#include <sstream>

#include "common/model/synthetic/synthetic_model.h"
#include "scheduler/sim/study.h"
#include "scheduler/sim/svg_chart.h"
#include "tests/bench/placement_study.h"

using namespace dancemoe;
using namespace dancemoe::bench;

namespace {

struct Options {
  fs::path out = "docs/placement/runtime";
  fs::path trace =
      fs::path(DMOE_SOURCE_DIR) / "../shared/traces/olmoe_1b7b_domains/tokens_sample.csv";
  fs::path model = fs::path(DMOE_BUILD_DIR) / "bench-models/olmoe";
  std::vector<std::string> links = {"1gbit", "500mbit", "100mbit"};
  std::vector<std::string> policies = {"uniform",           "eplb",   "dancemoe", "optimal",
                                       "optimal-migration", "latency"};
  int rounds = 2;
  int requests = 3;
  int tokens = 32;
  int profile = 4;
  int threads = 1;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

StudyLink link_named(const std::string& name) {
  if (name == "1gbit") return {name, 1e9, 0.5};
  if (name == "500mbit") return {name, 500e6, 1.0};
  if (name == "100mbit") return {name, 100e6, 2.0};
  return {"loopback", 0, 0};
}

struct Summary {  // one (link, policy, phase) over its samples
  std::vector<double> token_ms;
  uint64_t steps = 0, local_steps = 0, activations = 0, local_activations = 0;
  uint64_t remote_bytes = 0, remote_calls = 0, tokens = 0;
  std::string decision;
  double l_step() const { return steps ? static_cast<double>(local_steps) / steps : 0; }
  double local() const {
    return activations ? static_cast<double>(local_activations) / activations : 0;
  }
};

std::map<std::tuple<std::string, std::string, std::string>, Summary> summarize(
    const StudyResult& r) {
  std::map<std::tuple<std::string, std::string, std::string>, Summary> out;
  for (const PhaseResult& p : r.phases) {
    Summary& s = out[{p.link, p.policy, p.phase}];
    s.token_ms.insert(s.token_ms.end(), p.token_ms.begin(), p.token_ms.end());
    s.steps += p.steps;
    s.local_steps += p.local_steps;
    s.activations += p.activations;
    s.local_activations += p.local_activations;
    s.remote_bytes += p.remote_bytes;
    s.remote_calls += p.remote_calls;
    s.tokens += p.tokens;
    if (!p.decision.empty()) s.decision = p.decision;
  }
  return out;
}

// The simulator on the study's configuration with the calibrated constants.
struct SimCalibration {
  double dense_s_per_layer = 0;
  double expert_s = 0;  // one expert, one token (a + b of the simulator)
  double message_overhead_s = 0;
  double bytes_per_message = 0;
};

Result<sim::StudyResult> simulate(const Options& o, const StudyOptions& study,
                                  const StudyLink& link, const SimCalibration& cal,
                                  uint64_t expert_bytes, uint64_t all_bytes) {
  sim::SimConfig c;
  c.name = "runtime study, " + link.name + " (simulated)";
  c.seed = 1;
  c.duration_s = 4000;
  c.timeline_bucket_s = 400;
  c.model = sim::SimModel{16, 64, 8, expert_bytes,
                          static_cast<uint64_t>(std::max(1.0, cal.bytes_per_message))};
  c.link = sim::SimLink{link.bits_per_s / 8, 2 * link.delay_ms / 1e3, cal.message_overhead_s};
  for (const StudyNode& n : study.nodes) {
    sim::SimNode node;
    node.id = n.id;
    node.task = n.domain;
    node.arrival_rate_per_s = 0.005;  // one request at a time, as measured
    node.dense_s_per_layer = cal.dense_s_per_layer;
    node.devices.push_back(sim::SimDevice{
        "cpu", static_cast<uint64_t>(n.memory_fraction * static_cast<double>(all_bytes)), 1e9,
        cal.expert_s, 0.0});
    c.nodes.push_back(node);
  }
  c.trace_workload = true;
  c.trace.path = o.trace;
  c.placement.policies = o.policies;
  return sim::run_study(c, 2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--out")
      o.out = value();
    else if (a == "--trace")
      o.trace = value();
    else if (a == "--model")
      o.model = value();
    else if (a == "--links")
      o.links = split(value());
    else if (a == "--policies")
      o.policies = split(value());
    else if (a == "--rounds")
      o.rounds = std::stoi(value());
    else if (a == "--requests")
      o.requests = std::stoi(value());
    else if (a == "--tokens")
      o.tokens = std::stoi(value());
    else if (a == "--profile")
      o.profile = std::stoi(value());
    else if (a == "--threads")
      o.threads = std::stoi(value());
    else {
      std::fprintf(stderr, "unknown argument %s (see bench_placement_runtime.cpp)\n", a.c_str());
      return 2;
    }
  }
  if (!fs::exists(o.trace)) {
    std::fprintf(stderr, "%s: the routing trace is missing\n", o.trace.c_str());
    return 2;
  }
  if (!fs::exists(o.model / "config.json")) {
    std::printf("generating the olmoe-shape preset in %s ...\n", o.model.c_str());
    SyntheticModelSpec spec;
    spec.preset = "olmoe-shape";
    spec.write_tokenizer = false;
    if (Status s = write_synthetic_model(spec, o.model); !s.is_ok()) {
      std::fprintf(stderr, "%s\n", s.to_string().c_str());
      return 1;
    }
  }
  StudyOptions study;
  study.node_binary = DMOE_NODE_PATH;
  study.scheduler_binary = DMOE_SCHEDULER_PATH;
  study.model = o.model;
  study.trace = fs::absolute(o.trace);
  study.work = fs::path(DMOE_BUILD_DIR) / "bench-placement-runtime";
  study.origins = {"general", "coding", "math", "reasoning"};
  study.nodes = {{"n1", "general", 0.45},
                 {"n2", "coding", 0.35},
                 {"n3", "math", 0.30},
                 {"n4", "reasoning", 0.25}};
  study.policies = o.policies;
  for (const std::string& l : o.links) study.links.push_back(link_named(l));
  study.rounds = o.rounds;
  study.requests_per_node = o.requests;
  study.tokens_per_request = o.tokens;
  study.profile_requests = o.profile;
  study.shift_node = "n2";
  study.shift_domain = "math";
  study.threads = o.threads;
  fs::create_directories(o.out);

  std::printf("baseline: one node holding every expert ...\n");
  Result<Baseline> baseline = run_baseline(study, 2);
  if (!baseline.is_ok()) {
    std::fprintf(stderr, "%s\n", baseline.status().to_string().c_str());
    return 1;
  }
  std::printf("baseline: %.2f ms/token, local call %.0f us, %.1f us per pair\n",
              mean_of(baseline->token_ms), baseline->local_call_us, baseline->expert_us_per_pair);
  Result<StudyResult> result = run_study(study, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  if (!result.is_ok()) {
    std::fprintf(stderr, "%s\n", result.status().to_string().c_str());
    return 1;
  }
  const auto summary = summarize(*result);

  // Raw phases.
  std::ostringstream csv;
  csv << "link,policy,phase,sample,tokens,mean_ms,p50_ms,p99_ms,local_step_ratio,local_ratio,"
         "remote_bytes_per_token,remote_calls_per_token,decision\n";
  for (const PhaseResult& p : result->phases) {
    const double t = static_cast<double>(std::max<uint64_t>(p.tokens, 1));
    csv << p.link << "," << p.policy << "," << p.phase << "," << p.sample << "," << p.tokens << ","
        << mean_of(p.token_ms) << "," << quantile_of(p.token_ms, 0.5) << ","
        << quantile_of(p.token_ms, 0.99) << ","
        << (p.steps ? static_cast<double>(p.local_steps) / p.steps : 0) << ","
        << (p.activations ? static_cast<double>(p.local_activations) / p.activations : 0) << ","
        << p.remote_bytes / t << "," << p.remote_calls / t << "," << p.decision << "\n";
  }
  (void)sim::write_text_file(o.out / "runtime.csv", csv.str());

  auto checkpoint = Checkpoint::open(o.model);
  const uint64_t expert_bytes = (*checkpoint)->expert_bytes(0, 0);
  const uint64_t all_bytes = expert_bytes * 16 * 64;
  std::ostringstream md, cal_csv;
  cal_csv << "link,remote_call_us,local_call_us,expert_us_per_pair,bytes_per_message,"
             "dense_s_per_layer,expert_s,message_overhead_s\n";
  md << "Baseline (one node, every expert): " << mean_of(baseline->token_ms)
     << " ms/token, local call " << baseline->local_call_us << " us.\n\n";
  for (size_t li = 0; li < study.links.size(); ++li) {
    const StudyLink& link = study.links[li];
    const LinkCalibration& lc = result->calibration[li];
    // Calibration (placement_study.h, docs/placement-latency.md).
    SimCalibration cal;
    cal.expert_s = baseline->local_call_us * 1e-6 / 8;
    cal.dense_s_per_layer = std::max(
        0.0, (mean_of(baseline->token_ms) * 1e-3 - 16 * baseline->local_call_us * 1e-6) / 16);
    uint64_t bytes = 0, calls = 0, acts = 0, local_acts = 0;
    for (const auto& [key, s] : summary) {
      if (std::get<0>(key) != link.name) continue;
      bytes += s.remote_bytes;
      calls += s.remote_calls;
      acts += s.activations;
      local_acts += s.local_activations;
    }
    cal.bytes_per_message = calls ? static_cast<double>(bytes) / (2.0 * calls) : 4096;
    const double experts_per_call = calls ? static_cast<double>(acts - local_acts) / calls : 1;
    const double wire_s = link.bits_per_s > 0 ? cal.bytes_per_message * 8 / link.bits_per_s : 0;
    cal.message_overhead_s = std::max(0.0, (lc.remote_call_us * 1e-6 - 2 * link.delay_ms * 1e-3 -
                                            2 * wire_s - experts_per_call * cal.expert_s) /
                                               2);
    cal_csv << link.name << "," << lc.remote_call_us << "," << lc.local_call_us << ","
            << lc.expert_us_per_pair << "," << cal.bytes_per_message << "," << cal.dense_s_per_layer
            << "," << cal.expert_s << "," << cal.message_overhead_s << "\n";
    Result<sim::StudyResult> simulated = simulate(o, study, link, cal, expert_bytes, all_bytes);
    if (!simulated.is_ok()) {
      std::fprintf(stderr, "%s\n", simulated.status().to_string().c_str());
      return 1;
    }
    md << "### " << link.name << " (" << link.bits_per_s / 1e6 << " Mbit/s, " << link.delay_ms
       << " ms one-way)\n\n"
       << "| policy | mean ms/token | p50 | p99 | fully-local steps | local activations | "
          "bytes/token | simulated mean | sim. l_step | sim. error |\n"
       << "|---|---|---|---|---|---|---|---|---|---|\n";
    sim::BarChart latency;
    latency.title = "per-token latency, " + link.name;
    latency.y_label = "ms";
    latency.categories = {"mean", "p50", "p99", "simulated mean"};
    for (const std::string& policy : o.policies) {
      const Summary& s = summary.at({link.name, policy, "before"});
      const sim::SimResult* run = nullptr;
      for (const sim::SimResult& r : simulated->runs) {
        if (r.policy == policy) run = &r;
      }
      const double measured = mean_of(s.token_ms);
      const double sim_ms = run ? run->overall.token_mean_s * 1e3 : 0;
      char line[512];
      std::snprintf(line, sizeof line,
                    "| %s | %.2f | %.2f | %.2f | %.3f | %.3f | %.0f | %.2f | %.3f | %+.1f %% |\n",
                    policy.c_str(), measured, quantile_of(s.token_ms, 0.5),
                    quantile_of(s.token_ms, 0.99), s.l_step(), s.local(),
                    static_cast<double>(s.remote_bytes) / std::max<uint64_t>(s.tokens, 1), sim_ms,
                    run ? run->overall.local_step_ratio() : 0, (sim_ms / measured - 1) * 100);
      md << line;
      latency.series.push_back(
          {policy,
           {},
           {measured, quantile_of(s.token_ms, 0.5), quantile_of(s.token_ms, 0.99), sim_ms}});
    }
    (void)sim::write_text_file(o.out / ("latency_" + link.name + ".svg"),
                               sim::render_bar_chart(latency));
    if (summary.count({link.name, "latency", "before"}) &&
        summary.count({link.name, "dancemoe", "before"})) {
      const double ratio = mean_of(summary.at({link.name, "latency", "before"}).token_ms) /
                           mean_of(summary.at({link.name, "dancemoe", "before"}).token_ms);
      md << "\nlatency / dancemoe, mean per-token latency: " << ratio << " (" << (1 - ratio) * 100
         << " % lower)\n";
    }
    md << "\nShift (n2: coding -> math): mean ms/token with the old placement, the gated "
          "round's outcome, after it\n\n| policy | stale | round | after | stale l_step | after "
          "l_step |\n|---|---|---|---|---|---|\n";
    sim::BarChart shift;
    shift.title = "workload shift, " + link.name;
    shift.y_label = "ms per token";
    shift.categories = {"before", "stale", "after the round"};
    for (const std::string& policy : o.policies) {
      if (!summary.count({link.name, policy, "stale"})) continue;
      const Summary& stale = summary.at({link.name, policy, "stale"});
      const Summary& after = summary.at({link.name, policy, "after"});
      char line[256];
      std::snprintf(line, sizeof line, "| %s | %.2f | %s | %.2f | %.3f | %.3f |\n", policy.c_str(),
                    mean_of(stale.token_ms), after.decision.c_str(), mean_of(after.token_ms),
                    stale.l_step(), after.l_step());
      md << line;
      shift.series.push_back({policy,
                              {},
                              {mean_of(summary.at({link.name, policy, "before"}).token_ms),
                               mean_of(stale.token_ms), mean_of(after.token_ms)}});
    }
    (void)sim::write_text_file(o.out / ("shift_" + link.name + ".svg"),
                               sim::render_bar_chart(shift));
    md << "\n";
  }
  sim::BarChart steps;
  steps.title = "fully-local steps (measured)";
  steps.y_label = "share of (token, layer) steps";
  for (const StudyLink& link : study.links) steps.categories.push_back(link.name);
  for (const std::string& policy : o.policies) {
    sim::ChartSeries series{policy, {}, {}};
    for (const StudyLink& link : study.links) {
      series.y.push_back(summary.at({link.name, policy, "before"}).l_step());
    }
    steps.series.push_back(std::move(series));
  }
  (void)sim::write_text_file(o.out / "local_steps.svg", sim::render_bar_chart(steps));
  (void)sim::write_text_file(o.out / "calibration.csv", cal_csv.str());
  (void)sim::write_text_file(o.out / "summary.md", md.str());
  std::printf("\n%s", md.str().c_str());
  std::printf("wrote %s/{runtime.csv,calibration.csv,summary.md,*.svg}\n", o.out.c_str());
  return 0;
}
