// Activation counts per node over a time range, summed from the raw reports
// and the roll-up buckets (the placement round's f[n][l][e], and the
// dashboard's heatmap). One reader for both, over any connection to the
// store's file: the service loop's own (Store::counts_since) or a read-only
// one (SeriesReader).
//
// Same thread rules as the Database passed in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/store/sqlite.h"
#include "scheduler/store/store.h"

namespace dancemoe::store {

// Per node, counts of every expert of `index` (dense vector over flat ids)
// in reports received at or after `since_ms` and roll-up buckets that end
// after it. Entries outside `index` are ignored (validated on the way in:
// only a model change could produce them, and bind_identity refuses that).
Result<std::map<std::string, std::vector<double>>> read_counts_since(Database& db, int64_t since_ms,
                                                                     const CountIndex& index);

}  // namespace dancemoe::store
