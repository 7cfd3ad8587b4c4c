// What the node reports about its machine at registration (DESIGN.md §5.1):
// the memory it can give to experts and how fast it loads them, plus the
// ready file tests and launchers wait for. Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/base/status.h"
#include "common/model/checkpoint.h"

namespace dancemoe::node {

// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
uint64_t available_memory_bytes();

// Reads up to `max_bytes` of expert weights from the checkpoint (timed; the
// page cache counts, as it would for a migration) and returns bytes/s.
double measure_load_bandwidth(const Checkpoint& checkpoint, uint64_t max_bytes = 64ull << 20);

// Writes `content` to `path` atomically (temporary file + rename), so a
// reader never sees a half-written file.
Status write_json_atomically(const std::filesystem::path& path, const nlohmann::json& content);

}  // namespace dancemoe::node
