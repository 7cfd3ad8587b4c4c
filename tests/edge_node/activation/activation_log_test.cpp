#include "edge_node/activation/activation_log.h"

#include <doctest/doctest.h>

#include <map>

#include "edge_node/activation/latency_histogram.h"
#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {

TEST_CASE("activation log: counts every routed pair per (layer, expert) and where it was served") {
  test_support::TinyModel model;
  ActivationLog log(model.config());
  RoutingDecision r;
  r.n_tokens = 3;
  r.top_k = 2;
  r.expert_ids = {1, 4, 1, 2, 7, 1};
  r.weights = {0.6f, 0.4f, 0.5f, 0.5f, 0.9f, 0.1f};
  // One forward as the engine records it: tokens, then each MoE layer; only
  // the last MoE layer routes anything here.
  const std::vector<int32_t> moe = model.moe_layers();
  RoutingDecision nothing;
  nothing.n_tokens = 3;
  nothing.top_k = 2;
  log.record_tokens(3);
  for (size_t i = 0; i + 1 < moe.size(); ++i) log.record_layer(moe[i], nothing, 0, 0);
  log.record_layer(moe.back(), r, /*n_local=*/4, /*n_offloaded=*/1);
  log.record_request();
  log.record_local_call(120);
  log.record_remote_call("b", 400, 1000, true);
  log.record_remote_call("b", 0, 500, false);

  const ServedCounts t = log.totals();
  CHECK(t.activations == 6 + 6 * (moe.size() - 1));
  CHECK(t.local == 4);
  CHECK(t.offloaded == 1);
  CHECK(t.remote == 1 + 6 * (moe.size() - 1));
  CHECK(t.remote_calls == 2);
  CHECK(t.remote_failures == 1);
  CHECK(t.tokens == 3);
  CHECK(t.requests == 1);

  const std::vector<proto::ActivationReport> reports = log.take_windows(unix_now_ms());
  REQUIRE(reports.size() == 1);
  const proto::ActivationReport& w = reports[0];
  CHECK(w.tokens == 3);
  CHECK(w.requests == 1);
  CHECK(w.local_hits == 4);
  CHECK(w.local_calls == 1);
  // Sparse, in (layer, expert) order.
  const auto last = static_cast<uint16_t>(moe.back());
  REQUIRE(w.counts.size() == 4);
  CHECK(w.counts[0] == proto::ExpertCount{last, 1, 3});
  CHECK(w.counts[1] == proto::ExpertCount{last, 2, 1});
  CHECK(w.counts[2] == proto::ExpertCount{last, 4, 1});
  CHECK(w.counts[3] == proto::ExpertCount{last, 7, 1});
  REQUIRE(w.remote.size() == 1);
  CHECK(w.remote[0].peer == "b");
  CHECK(w.remote[0].calls == 2);
  CHECK(w.remote[0].failures == 1);
  CHECK(w.remote[0].bytes == 1500);
  CHECK(w.remote[0].mean_latency_us == doctest::Approx(400));
  // The window was reset; an empty window is not reported.
  CHECK(log.take_windows(unix_now_ms()).empty());
}

TEST_CASE("activation log: a window never spans two placement versions") {
  test_support::TinyModel model;
  ActivationLog log(model.config());
  RoutingDecision r;
  r.n_tokens = 1;
  r.top_k = 2;
  r.expert_ids = {0, 1};
  r.weights = {0.5f, 0.5f};
  // Single-token forwards through the last MoE layer only (no routing in
  // the others, which the log accepts: it counts what it is given).
  const int32_t last = model.moe_layers().back();
  log.set_placement_version(1, 1000);
  log.record_tokens(1);
  log.record_layer(last, r, 2, 0);
  log.set_placement_version(2, 2000);
  log.record_tokens(1);
  log.record_layer(last, r, 1, 0);
  log.record_tokens(1);
  log.record_layer(last, r, 1, 0);
  const std::vector<proto::ActivationReport> reports = log.take_windows(3000);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].placement_version == 1);
  CHECK(reports[0].local_hits == 2);
  CHECK(reports[0].window_end_ms == 2000);
  CHECK(reports[1].placement_version == 2);
  CHECK(reports[1].local_hits == 2);
  CHECK(reports[1].window_start_ms == 2000);
  CHECK(reports[1].window_end_ms == 3000);
  const ActivationSnapshot s = log.snapshot();
  CHECK(s.placement_version == 2);
  CHECK(s.since_version.activations == 4);
  CHECK(s.total.activations == 6);
  CHECK(s.counts_since_version[static_cast<size_t>(last)][0] == 2);
}

TEST_CASE("activation log: a window closed mid-forward keeps the forward whole") {
  test_support::TinyModel model;
  ActivationLog log(model.config());
  const std::vector<int32_t> moe = model.moe_layers();
  REQUIRE(moe.size() >= 2);
  RoutingDecision r;
  r.n_tokens = 2;
  r.top_k = 2;
  r.expert_ids = {0, 1, 2, 3};
  r.weights = {0.5f, 0.5f, 0.5f, 0.5f};
  auto each_layer_within_tokens = [&](const proto::ActivationReport& report) {
    std::map<uint16_t, uint64_t> per_layer;
    for (const proto::ExpertCount& c : report.counts) per_layer[c.layer] += c.count;
    for (const auto& [layer, sum] : per_layer) {
      INFO("layer " << layer);
      CHECK(sum <= report.tokens * 2);
    }
  };
  // The report is taken after the first MoE layer of a forward: that
  // forward is not in it.
  log.record_tokens(2);
  for (int32_t l : moe) log.record_layer(l, r, 0, 0);
  log.record_tokens(2);
  log.record_layer(moe[0], r, 0, 0);
  std::vector<proto::ActivationReport> first = log.take_windows(unix_now_ms());
  REQUIRE(first.size() == 1);
  CHECK(first[0].tokens == 2);
  each_layer_within_tokens(first[0]);
  for (size_t i = 1; i < moe.size(); ++i) log.record_layer(moe[i], r, 0, 0);
  std::vector<proto::ActivationReport> second = log.take_windows(unix_now_ms());
  REQUIRE(second.size() == 1);
  CHECK(second[0].tokens == 2);
  CHECK(second[0].counts.size() == 4 * moe.size());
  each_layer_within_tokens(second[0]);

  // A forward that failed after its first layer is counted when the next
  // one starts, with the layers it reached.
  log.record_tokens(2);
  log.record_layer(moe[0], r, 0, 0);
  CHECK(log.take_windows(unix_now_ms()).empty());
  log.record_tokens(2);
  for (int32_t l : moe) log.record_layer(l, r, 0, 0);
  std::vector<proto::ActivationReport> third = log.take_windows(unix_now_ms());
  REQUIRE(third.size() == 1);
  CHECK(third[0].tokens == 4);
  each_layer_within_tokens(third[0]);
  CHECK(log.totals().activations == 4 * (2 * moe.size() + 1 + moe.size()));
}

TEST_CASE("latency histogram: mean exact, p99 within one bucket (9 %)") {
  LatencyHistogram h;
  CHECK(h.quantile_us(0.99) == 0);
  for (int i = 1; i <= 1000; ++i) h.add(i);
  CHECK(h.count() == 1000);
  CHECK(h.mean_us() == doctest::Approx(500.5));
  CHECK(h.quantile_us(0.99) >= 990);
  CHECK(h.quantile_us(0.99) <= 990 * 1.091);
  h.add(-5);  // clock oddity: counted as 0, no crash
  CHECK(h.count() == 1001);
}

TEST_CASE("activation log: reports each window's co-activation pairs above independence") {
  test_support::TinyModel model;
  const std::vector<int32_t> moe = model.moe_layers();
  auto forward = [&](ActivationLog& log, std::vector<int32_t> ids) {
    RoutingDecision r;
    r.n_tokens = static_cast<int64_t>(ids.size() / 2);
    r.top_k = 2;
    r.expert_ids = std::move(ids);
    r.weights.assign(r.expert_ids.size(), 0.5f);
    log.record_tokens(static_cast<uint64_t>(r.n_tokens));
    for (int32_t layer : moe) log.record_layer(layer, r, 0, 0);
  };
  ActivationLog log(model.config(), {"cpu"}, /*pairs_per_layer=*/1);
  // Tokens {0,1}, {0,1}, {2,3}: both pairs are above independence (excess
  // 2/3 each); one per layer is kept, the more frequent.
  forward(log, {0, 1, 1, 0, 2, 3});
  std::vector<proto::ActivationReport> reports = log.take_windows(unix_now_ms());
  REQUIRE(reports.size() == 1);
  REQUIRE(reports[0].pairs.size() == moe.size());
  for (size_t i = 0; i < moe.size(); ++i) {
    CHECK(reports[0].pairs[i] == proto::ExpertPair{moe[i], 0, 1, 2});
  }
  // The next window starts empty; a version change closes a window with its pairs.
  forward(log, {2, 3});
  log.set_placement_version(5, unix_now_ms());
  forward(log, {0, 2, 1, 3});
  reports = log.take_windows(unix_now_ms());
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].placement_version == 0);
  CHECK(reports[0].pairs.empty());  // one token: nothing above independence
  CHECK(reports[1].placement_version == 5);
  CHECK(reports[1].pairs.size() == moe.size());
  // Off: no pairs at all.
  ActivationLog off(model.config(), {"cpu"}, 0);
  forward(off, {0, 1, 1, 0, 2, 3});
  reports = off.take_windows(unix_now_ms());
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].pairs.empty());
}

}  // namespace dancemoe::node
