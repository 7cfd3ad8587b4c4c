// The scheduler database's schema and its numbered migrations
// (DESIGN.md §6). The schema version lives in `PRAGMA user_version`:
// migration i takes a database from version i-1 to i inside one
// transaction, so a crash mid-upgrade leaves the previous version intact. A
// database whose version is newer than this build knows is refused (an old
// binary must not write into tables it does not understand).
//
// Tables (schema version 1):
//   meta               key/value: model_id and cluster_id the database serves
//   nodes, devices     every node that ever registered, with its last handshake
//   reports            one row per stored ActivationReport: totals and the
//                      sparse (layer, expert, count) list packed in a blob
//                      (count_blob.h); unique on (node, sequence, window start)
//   report_peers       per-peer remote-call statistics of a report
//   rollups,           reports older than the raw retention, summed per node
//   rollup_peers       and time bucket (retention.h)
//   watermarks         per node: newest window end rolled up (older resends are stale)
//   placements         every placement version: policy, state, times
//   placement_nodes,   the devices and experts of each version
//   placement_entries
//   decisions          every placement round: C(P), C(P'), T_mig, outcome
//   migrations         every two-phase migration: versions, bytes, times, outcome
// Schema version 2 adds devices.kind and device_compute (per-device expert
// compute); version 3 adds:
//   node_keys          which CURVE key registered each node id first (a node id
//                      is bound to that key; docs/security.md); unique both ways
// and version 4 the co-activation pairs of reports and roll-ups (pair_blob.h).
//
// Functions take a Database owned by the caller; same thread rules.
#pragma once

#include "common/base/status.h"
#include "scheduler/store/sqlite.h"

namespace dancemoe::store {

// The newest schema version this build knows.
inline constexpr int kSchemaVersion = 4;

// Sets the connection's pragmas (WAL, synchronous level, foreign keys).
// `synchronous_full`: FULL survives power loss; NORMAL survives a process
// crash (kill -9) and costs no fsync per transaction.
Status configure_connection(Database& db, bool synchronous_full);

// Runs PRAGMA quick_check and refuses a damaged database with a message that
// names the file, what SQLite found, and what to do.
Status check_integrity(Database& db);

// Brings the database to kSchemaVersion, or refuses one that is newer.
Status migrate_schema(Database& db);

// The schema version recorded in the file.
Result<int> schema_version(Database& db);

}  // namespace dancemoe::store
