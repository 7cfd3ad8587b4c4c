// A look at a scheduler database without changing it (a read-only
// connection, no migration): what `dancemoe-scheduler --doctor` reports
// before the daemon would open it for real. Thread-safe (each call has its
// own connection).
#pragma once

#include <cstdint>
#include <string>

#include "common/base/status.h"

namespace dancemoe::store {

struct StoreSummary {
  int schema_version = 0;  // PRAGMA user_version; migrations bring it to kSchemaVersion
  std::string model_id;    // bound at the first start (empty: never started)
  std::string cluster_id;
  int64_t nodes = 0;  // nodes ever registered and not forgotten
};

// Errors: the file cannot be opened, is damaged (check_integrity's message,
// with what to do), or has a schema newer than this build knows.
Result<StoreSummary> inspect_store(const std::string& path);

}  // namespace dancemoe::store
