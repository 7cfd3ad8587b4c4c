// The model benchmark behind `dancemoe bench` (model_benchmark.h): its
// decode runs, the bandwidth probed beside each of them, and the roofline
// fraction of the fastest run against its own probe -- on the tiny preset,
// so only the bookkeeping is checked, never a speed.
#include "scheduler/cli/model/model_benchmark.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "scheduler/cli/model/memory_usage.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::cli {
namespace {

struct TinyModel {
  testing::TempDir dir{"model_benchmark"};
  std::unique_ptr<ModelRuntime> model;
  TinyModel() {
    testing::write_model(testing::tiny_spec(3), dir.path());
    model = testing::open_model(dir.path(), ComputePrecision::kF32, 2);
  }
};

ModelBenchParams small_params() {
  ModelBenchParams p;
  p.prompt_tokens = 8;
  p.gen_tokens = 4;
  p.repeats = 3;
  return p;
}

TEST_CASE("model benchmark: every decode run is recorded, the fastest is the result") {
  TinyModel m;
  Result<ModelBenchResult> r = run_model_benchmark(*m.model, small_params());
  REQUIRE(r.is_ok());
  REQUIRE(r->decode_runs.size() == 3);
  double fastest = 0;
  for (const DecodeRun& run : r->decode_runs) {
    CHECK(run.tok_s > 0);
    CHECK(run.membw_bytes_per_s == 0);  // not probed
    fastest = std::max(fastest, run.tok_s);
  }
  CHECK(r->decode_tok_s == doctest::Approx(fastest));
  CHECK(r->bytes_per_token > 0);
  CHECK(r->decode_membw == 0);
  CHECK(r->roofline_frac() == 0);  // no probe, no fraction
  CHECK(r->peak_rss_bytes > 0);
}

TEST_CASE(
    "model benchmark: with probes, each run has its own bandwidth and the fraction is the "
    "fastest run's against it") {
  TinyModel m;
  ModelBenchParams p = small_params();
  p.probe_bandwidth = true;
  const uint64_t peak_before = peak_resident_bytes();
  Result<ModelBenchResult> r = run_model_benchmark(*m.model, p);
  REQUIRE(r.is_ok());
  REQUIRE(r->decode_runs.size() == 3);
  const DecodeRun* fastest = &r->decode_runs[0];
  for (const DecodeRun& run : r->decode_runs) {
    CHECK(run.membw_bytes_per_s > 1e8);  // any machine reads faster than 100 MB/s
    if (run.tok_s > fastest->tok_s) fastest = &run;
  }
  CHECK(r->decode_membw == fastest->membw_bytes_per_s);
  CHECK(r->roofline_frac() ==
        doctest::Approx(fastest->tok_s * r->bytes_per_token / fastest->membw_bytes_per_s));
  // The probes' 256 MiB buffers are not the model's memory: the tiny
  // model's KV cache and scratch add far less than that.
  CHECK(r->peak_rss_bytes < peak_before + (uint64_t{64} << 20));
}

}  // namespace
}  // namespace dancemoe::cli
