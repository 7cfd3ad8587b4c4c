// A study: one scenario (SimConfig) run under each of its policies on the
// same workload, and its outputs for people: CSV tables and SVG plots.
//
// Files written by write_study into out_dir:
//   summary.csv       policy,node,requests,mean_latency_s,p50_latency_s,p99_latency_s,
//                     local_ratio,local_step_ratio,messages_per_step,migrations,
//                     experts_moved,bytes_moved,initial_local_hit_ratio,tokens,
//                     token_mean_s,token_p50_s,token_p99_s,remote_bytes
//                     (one row per node and one with node "all")
//   timeline.csv      policy,t_s,local_ratio,mean_latency_s,completed,local_step_ratio
//   replacements.csv  policy,t_s,cost_current_s,cost_new_s,migration_s,adopt,committed_at_s,
//                     experts_added,bytes
//   latency.svg       mean and p99 request latency per policy
//   node_latency.svg  mean latency per node and policy
//   local_ratio.svg   local compute ratio over time per policy
//   local_steps.svg   share of fully-local steps over time per policy
// Functions are reentrant; run_study may use `jobs` threads (one policy each).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/sim/config.h"
#include "scheduler/sim/simulator.h"

namespace dancemoe::sim {

struct StudyResult {
  SimConfig config;
  int64_t n_requests = 0;
  int64_t n_tokens = 0;
  std::vector<SimResult> runs;  // in the order of config.placement.policies
};

Result<StudyResult> run_study(const SimConfig& config, int jobs = 1);

Status write_study(const StudyResult& study, const std::filesystem::path& out_dir);

// A fixed-width table: policy, mean and p99 latency, local ratio, migrations.
std::string format_summary(const StudyResult& study);

Status write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace dancemoe::sim
