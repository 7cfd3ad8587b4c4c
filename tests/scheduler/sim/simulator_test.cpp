#include "scheduler/sim/simulator.h"

#include <doctest/doctest.h>

#include <cmath>

#include "scheduler/sim/study.h"
#include "tests/support/paths.h"

namespace dancemoe::sim {
namespace {

// Two nodes with one device of one expert slot each; 1 layer x 2 experts,
// top-1. Times chosen to be exact in binary-ish decimals:
// dense 1 ms, expert 0.5 ms + 0.1 ms per token, 100-byte hidden state on a
// 100 kB/s link (1 ms) with a 2 ms round trip.
SimConfig tiny_config() {
  SimConfig c;
  c.model = SimModel{1, 2, 1, 1000, 100};
  c.link = SimLink{1.0e5, 0.002};
  for (const char* id : {"a", "b"}) {
    SimNode node;
    node.id = id;
    node.task = "0";
    node.dense_s_per_layer = 0.001;
    node.devices.push_back(SimDevice{"gpu0", 1000, 1.0e6, 0.0005, 0.0001});
    c.nodes.push_back(node);
  }
  c.synthetic.n_tasks = 1;
  c.duration_s = 10;
  c.placement.policies = {"optimal"};
  return c;
}

SimRequest request(double t, int32_t node, std::vector<int16_t> experts) {
  SimRequest r;
  r.arrival_s = t;
  r.node = node;
  r.n_tokens = static_cast<int32_t>(experts.size());  // 1 layer, top-1
  r.experts = std::move(experts);
  return r;
}

// Profile: a uses expert 0, b uses expert 1, so optimal puts 0 on a, 1 on b.
std::vector<std::vector<double>> tiny_profile() { return {{10, 0}, {0, 10}}; }

TEST_CASE("sim: a local token costs dense plus expert compute") {
  const SimConfig c = tiny_config();
  const Workload w = Workload::from_requests({request(0.0, 0, {0})}, tiny_profile());
  Result<SimResult> r = simulate(c, w, "optimal");
  REQUIRE(r.is_ok());
  CHECK(r->overall.requests == 1);
  CHECK(r->overall.mean_s == doctest::Approx(0.001 + 0.0006));
  CHECK(r->overall.local_ratio() == 1.0);
}

TEST_CASE("sim: a remote token pays both link transfers, the round trip and remote compute") {
  const SimConfig c = tiny_config();
  // Two tokens, both routed to expert 1 (held by b): per token
  // dense 1 ms + send 1 ms + rtt/2 1 ms + compute 0.6 ms + reply 1 ms + rtt/2 1 ms.
  const Workload w = Workload::from_requests({request(0.0, 0, {1, 1})}, tiny_profile());
  Result<SimResult> r = simulate(c, w, "optimal");
  REQUIRE(r.is_ok());
  CHECK(r->overall.mean_s == doctest::Approx(2 * 0.0056));
  CHECK(r->nodes[0].local_ratio() == 0.0);
  CHECK(r->nodes[0].total_activations == 2);
}

TEST_CASE("sim: devices serve first come, first served") {
  const SimConfig c = tiny_config();
  // Both arrive at 0 on node a, both local. Device queue: r1 dense
  // [0, 1], r2 dense [1, 2], r1 expert [2, 2.6], r2 expert [2.6, 3.2] (ms).
  const Workload w =
      Workload::from_requests({request(0.0, 0, {0}), request(0.0, 0, {0})}, tiny_profile());
  Result<SimResult> r = simulate(c, w, "optimal");
  REQUIRE(r.is_ok());
  CHECK(r->overall.mean_s == doctest::Approx((0.0026 + 0.0032) / 2));
  CHECK(r->overall.p99_s == doctest::Approx(0.0032));
}

TEST_CASE("sim: links are FIFO queues: a second message waits for the first") {
  SimConfig c = tiny_config();
  // Two remote requests at once from a to b: the second message leaves
  // after the first (1 ms each on the link): r2's request reaches b 1 ms
  // later, but b's device is then busy with r1 only until 3.6 ms.
  const Workload w =
      Workload::from_requests({request(0.0, 0, {1}), request(0.0, 0, {1})}, tiny_profile());
  Result<SimResult> r = simulate(c, w, "optimal");
  REQUIRE(r.is_ok());
  // r1: dense [0,1], link [1,2] +1 -> 3, compute [3,3.6], reply link [3.6,4.6] +1 -> 5.6.
  // r2: dense [1,2], link [2,3] +1 -> 4, compute [4,4.6], reply [4.6,5.6] +1 -> 6.6.
  CHECK(r->overall.p99_s == doctest::Approx(0.0066));
  CHECK(r->overall.mean_s == doctest::Approx((0.0056 + 0.0066) / 2));
}

TEST_CASE("sim: migration chunks use idle links only, inference messages go first") {
  // Node a keeps asking for expert 1 (held by b). At t = 1 s the ungated
  // re-placement swaps the experts: a fetches 1 from b, b fetches 0 from a,
  // each 1000 bytes in 10 chunks of 100 bytes (1 ms on the wire), at most
  // half of the link's time (a 1 ms gap after each chunk).
  SimConfig c = tiny_config();
  c.duration_s = 1.5;
  c.placement.period_s = 1.0;
  c.placement.gate = false;
  c.placement.chunk_bytes = 100;
  std::vector<SimRequest> requests;
  for (int i = 1; i <= 9; ++i) requests.push_back(request(0.1 * i, 0, {1}));
  requests.push_back(request(1.0005, 0, {1}));
  const Workload w = Workload::from_requests(requests, tiny_profile());
  Result<SimResult> r = simulate(c, w, "optimal");
  REQUIRE(r.is_ok());
  REQUIRE(r->replacements.size() == 1);
  CHECK(r->replacements[0].adopt);
  CHECK(r->replacements[0].experts_added == 2);
  CHECK(r->migrations == 1);
  CHECK(r->bytes_moved == 2000);
  // The request at 1.0005 s: its message leaves at 1.0015 on the idle a->b
  // link (the next chunk waits for it); b computes until 1.0041; the reply
  // then waits for the chunk on b->a sent at 1.004 (no preemption), leaves
  // at 1.005 and arrives at 1.007: 6.5 ms instead of 5.6 ms.
  CHECK(r->overall.p99_s == doctest::Approx(0.0065));
  CHECK(r->overall.mean_s == doctest::Approx((9 * 0.0056 + 0.0065) / 10));
  // a->b chunks start at 1.0, 1.0025 (after the message), then every 2 ms:
  // the 10th at 1.0185, on the wire until 1.0195, arriving 1.0205, loaded
  // by 1.0215; b->a finishes at 1.021. Commit when both are in.
  CHECK(r->replacements[0].committed_at_s == doctest::Approx(1.0215));
}

TEST_CASE("sim: hand-made workloads that do not fit the config are refused") {
  const SimConfig c = tiny_config();
  Workload w = Workload::from_requests({request(0.0, 5, {0})}, tiny_profile());
  CHECK(simulate(c, w, "optimal").status().code() == StatusCode::kInvalidArgument);
  w = Workload::from_requests({request(0.0, 0, {7})}, tiny_profile());
  CHECK(simulate(c, w, "optimal").status().code() == StatusCode::kInvalidArgument);
  w = Workload::from_requests({request(0.0, 0, {0})}, tiny_profile());
  CHECK(simulate(c, w, "fastest").status().code() == StatusCode::kInvalidArgument);
}

// Two nodes, 4 layers x 16 experts, top-2; each node's GPU holds 60 % of the
// experts; node b switches task half-way.
SimConfig shift_config() {
  SimConfig c;
  c.name = "shift";
  c.seed = 3;
  c.duration_s = 240;
  c.timeline_bucket_s = 20;
  c.model = SimModel{4, 16, 2, 1 << 20, 4096};
  c.link = SimLink{62.5e6, 0.001};
  for (int n = 0; n < 2; ++n) {
    SimNode node;
    node.id = n == 0 ? "a" : "b";
    node.task = std::to_string(n);
    node.arrival_rate_per_s = 2.0;
    node.devices.push_back(
        SimDevice{"gpu0", static_cast<uint64_t>(0.6 * 64) << 20, 2.0e9, 4e-5, 1e-6});
    c.nodes.push_back(node);
  }
  c.synthetic.n_tasks = 3;
  c.synthetic.tokens_per_request = 8;
  c.synthetic.zipf_min = 1.2;
  c.synthetic.zipf_max = 1.6;
  c.synthetic.shared_ranking = 0.0;
  c.shifts.push_back(WorkloadShift{120, "b", "2"});
  c.placement.period_s = 30;
  return c;
}

TEST_CASE("sim: Poisson arrivals at the configured rate, the same for every policy") {
  const SimConfig c = shift_config();
  Result<Workload> w = Workload::create(c);
  REQUIRE(w.is_ok());
  // 2 nodes x 2/s x 240 s = 960 expected; 5 sigma is about 155.
  CHECK(std::fabs(static_cast<double>(w->requests().size()) - 960.0) < 155.0);
  Result<Workload> again = Workload::create(c);
  REQUIRE(again.is_ok());
  CHECK(again->requests().size() == w->requests().size());
  CHECK(again->requests().back().experts == w->requests().back().experts);
}

TEST_CASE("sim: a task mixture draws from each task -- its profile is the mean") {
  SimConfig c = shift_config();
  c.shifts.clear();
  c.nodes[0].task = "0+1";
  c.nodes[1].task = "0";
  Result<Workload> mixed = Workload::create(c);
  REQUIRE(mixed.is_ok());
  c.nodes[0].task = "1";
  Result<Workload> single = Workload::create(c);
  REQUIRE(single.is_ok());
  // node 0 mixes tasks 0 (node 1's profile) and 1 (node 0's in `single`).
  for (size_t i = 0; i < mixed->profile()[0].size(); ++i) {
    CHECK(mixed->profile()[0][i] ==
          doctest::Approx((single->profile()[1][i] + single->profile()[0][i]) / 2));
  }
}

TEST_CASE("sim: the shared OLMoE trace drives the simulator, one domain or a mixture per node") {
  const auto shared = testing::shared_file("traces/olmoe_1b7b_domains/tokens_sample.csv");
  if (!shared) return;
  const std::filesystem::path tokens = *shared;
  SimConfig c;
  c.duration_s = 30;
  c.model = SimModel{16, 64, 8, 12582912, 4096};
  for (const char* task : {"coding", "math+reasoning", "general"}) {
    SimNode node;
    node.id = std::string("n-") + task;
    node.task = task;
    node.arrival_rate_per_s = 0.5;
    node.devices.push_back(
        SimDevice{"gpu0", static_cast<uint64_t>(0.5 * 16 * 64 * 12582912.0), 2e9, 3e-5, 1e-6});
    c.nodes.push_back(node);
  }
  c.trace_workload = true;
  c.trace.path = tokens;
  c.placement.policies = {"uniform", "optimal"};
  Result<StudyResult> study = run_study(c);
  REQUIRE_MESSAGE(study.is_ok(), study.status().to_string());
  CHECK(study->n_requests > 20);
  const SimResult& uniform = study->runs[0];
  const SimResult& optimal = study->runs[1];
  CHECK(optimal.overall.requests == uniform.overall.requests);
  CHECK(optimal.overall.local_ratio() > uniform.overall.local_ratio() + 0.2);
  CHECK(optimal.initial_local_hit_ratio > uniform.initial_local_hit_ratio);
}

TEST_CASE("sim: after a workload shift, re-placement migrates experts and restores locality") {
  SimConfig c = shift_config();
  c.placement.policies = {"optimal-migration"};
  Result<StudyResult> study = run_study(c);
  REQUIRE(study.is_ok());
  const SimResult& run = study->runs.front();
  CHECK(run.migrations >= 1);
  CHECK(run.bytes_moved == static_cast<uint64_t>(run.experts_moved) * c.model.expert_bytes);
  // Some adopted re-placement happened after the shift at 120 s.
  bool after_shift = false;
  for (const ReplacementRecord& r : run.replacements) {
    if (r.adopt) {
      CHECK(r.committed_at_s >= r.t_s);
      CHECK(r.cost_new_s + r.migration_s < r.cost_current_s);
      after_shift = after_shift || r.t_s > 120;
    }
  }
  CHECK(after_shift);
  // Locality right after the shift (bucket 120-140 s) is below the end's.
  const auto& tl = run.timeline;
  REQUIRE(tl.size() >= 11);
  CHECK(tl[6].local_ratio < tl[10].local_ratio);

  // The same scenario without re-placement keeps the stale placement.
  c.placement.period_s = 0;
  Result<StudyResult> frozen = run_study(c);
  REQUIRE(frozen.is_ok());
  CHECK(frozen->runs.front().migrations == 0);
  CHECK(frozen->runs.front().overall.local_ratio() < run.overall.local_ratio());
}

TEST_CASE("sim: the gate refuses migrations that cannot pay for themselves") {
  SimConfig c = shift_config();
  c.placement.policies = {"optimal"};
  for (SimNode& node : c.nodes) node.devices[0].load_bytes_per_s = 1.0;  // 1 B/s
  Result<StudyResult> gated = run_study(c);
  REQUIRE(gated.is_ok());
  CHECK(gated->runs.front().migrations == 0);
  CHECK_FALSE(gated->runs.front().replacements.empty());
  // Without the gate the same policy migrates anyway (and pays in link time).
  c.placement.gate = false;
  for (SimNode& node : c.nodes) node.devices[0].load_bytes_per_s = 2.0e9;
  Result<StudyResult> ungated = run_study(c);
  REQUIRE(ungated.is_ok());
  CHECK(ungated->runs.front().migrations >= 1);
}

TEST_CASE("sim: runs are deterministic and write their CSV and SVG outputs") {
  SimConfig c = shift_config();
  c.duration_s = 60;
  c.placement.policies = {"uniform", "dancemoe"};
  Result<StudyResult> a = run_study(c, 2);
  Result<StudyResult> b = run_study(c, 1);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  for (size_t i = 0; i < a->runs.size(); ++i) {
    CHECK(a->runs[i].overall.mean_s == b->runs[i].overall.mean_s);
    CHECK(a->runs[i].events == b->runs[i].events);
  }
  CHECK(format_summary(*a).find("dancemoe") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::sim
