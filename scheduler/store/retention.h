// Retention with roll-up: keeps the scheduler database small over weeks.
//
// Raw reports older than `raw_retention_ms` (by the scheduler's receive
// time) are summed per node into time buckets of `bucket_ms` (counts per
// (layer, expert), tokens, requests, hits, call counts and latency sums,
// per-peer call sums) and deleted, in one transaction per batch. Buckets
// older than `rollup_retention_ms` are deleted, and so are decisions and
// migrations older than that. Placement versions keep their row forever
// (versions must stay monotonic) but only the committed version and the
// newest `keep_placement_versions` keep their expert lists.
//
// What is lost is time resolution, never totals: a statistics window that
// reaches into rolled-up time includes every bucket that overlaps it (up to
// one bucket of older data; see Store::counts_since). The newest rolled-up
// window end per node becomes its watermark: a report resent after its
// original was rolled up is recognised as stale instead of counted twice.
//
// Sizing (DESIGN.md §6, issue 4): 16 nodes on an OLMoE shape (16 x 64
// experts) reporting every 10 s keep one hour raw (about 5,800 reports of
// about 3 KB) plus one 3 KB bucket per node and hour (2,700 a week): tens of
// MB, well under the 200 MB budget; tests/bench/bench_scheduler_retention
// measures it.
//
// Called from the store's thread (the service loop), a bounded batch at a
// time so that one call never blocks ingest for long.
#pragma once

#include <cstdint>

#include "common/base/status.h"
#include "scheduler/store/store.h"

namespace dancemoe::store {

struct RetentionPolicy {
  int64_t raw_retention_ms = int64_t{3600} * 1000;               // 1 h of raw reports
  int64_t bucket_ms = int64_t{3600} * 1000;                      // roll-up buckets of 1 h
  int64_t rollup_retention_ms = int64_t{30} * 24 * 3600 * 1000;  // 30 days of buckets
  int keep_placement_versions = 50;
  // Co-activation pairs a roll-up bucket keeps per layer (the most above
  // independence, as nodes select them): a day of 10 s windows lists far
  // more distinct pairs than any one report.
  int rollup_pairs_per_layer = 256;
  int batch_reports = 2000;  // reports rolled up per call (one transaction)
};

struct RetentionStats {
  int64_t reports_rolled_up = 0;
  int64_t buckets_written = 0;
  int64_t rows_deleted = 0;  // old buckets, decisions, migrations, placement entries
  bool more = false;         // the batch was full: call again
};

class Retention {
 public:
  static Result<RetentionStats> apply(Store& store, const RetentionPolicy& policy, int64_t now_ms);
};

}  // namespace dancemoe::store
