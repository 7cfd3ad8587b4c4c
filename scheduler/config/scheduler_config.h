// Configuration of `dancemoe-scheduler`: every key can come from a TOML file
// (--config FILE.toml) and from a flag of the same name (TOML `heartbeat_misses`
// is --heartbeat-misses); flags win over the file, the file over the
// defaults below. config_keys() is the one table both read, so a key cannot
// exist in one form and not the other, and --help lists every key with its
// unit and default.
//
// Times are seconds (fractions allowed); sizes bytes; bandwidths bytes/s.
// Example file: deploy/scheduler.example.toml.
//
// Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "common/base/status.h"

namespace dancemoe::scheduler {

struct SchedulerConfig {
  std::string model_dir;                 // model directory (only headers are read)
  std::string control = "tcp://*:5550";  // ZeroMQ ROUTER endpoint nodes connect to
  std::string db = "dancemoe-scheduler.db";
  std::string cluster_id = "default";
  double interval_s = 300.0;          // placement period
  double heartbeat_interval_s = 2.0;  // told to nodes
  int64_t heartbeat_misses = 3;       // missed heartbeats before a node is down
  double report_interval_s = 10.0;    // activation report window, told to nodes
  std::string policy = "latency";     // docs/placement-latency.md: why the default
  double horizon_s = 0.0;             // H of the gate; 0 means "= interval"
  double prepare_timeout_s = 120.0;   // a node not ready by then aborts the version
  double cold_start_settle_s = 5.0;   // quiet time after the last join before the first placement
  double default_remote_penalty_s = 0.002;  // delta[n] for a node that measured nothing yet
  double default_load_bytes_per_s = 1.0e9;  // speed[n][g] for a device that reports 0
  double raw_retention_s = 3600.0;
  double rollup_bucket_s = 3600.0;
  double rollup_retention_s = 30.0 * 86400.0;
  double retention_check_s = 60.0;
  std::string sync = "normal";                   // SQLite synchronous: normal or full
  int64_t max_message_bytes = int64_t{8} << 20;  // largest inbound envelope accepted
  std::string ready_file;
  std::string log_level = "info";
  // Security (docs/security.md): CurveZMQ with these keys unless `insecure`.
  std::string secret_key;     // the scheduler's NAME.key
  std::string nodes_keys;     // directory of admitted node keys (NAME.pub)
  std::string operator_keys;  // directory of operator keys (NAME.pub)
  bool insecure = false;      // plain sockets, everyone may do everything
  // The dashboard and its JSON API (scheduler/http): HOST:PORT, or "off".
  // Loopback by default; rights as on the control port (http_access.h).
  std::string http = "127.0.0.1:8090";
  std::string http_token;  // --insecure only: a shared bearer token; empty: none
  // Expert precisions nodes may hold besides the model file's own
  // (comma-separated, e.g. "q4_K,q8_0"; "*": any). Empty: every node must
  // hold the model file's precision.
  std::string expert_types;

  // The horizon actually used.
  double effective_horizon_s() const { return horizon_s > 0 ? horizon_s : interval_s; }

  // Range checks; errors name the key ("--interval / interval: ...").
  Status validate() const;
};

struct ConfigKey {
  const char* name;  // TOML key; the flag is "--" + name with '_' -> '-'
  const char* help;  // with unit
  std::variant<std::string SchedulerConfig::*, double SchedulerConfig::*,
               int64_t SchedulerConfig::*, bool SchedulerConfig::*>
      field;
};

std::span<const ConfigKey> config_keys();

// "--heartbeat-misses" for "heartbeat_misses".
std::string flag_name(const ConfigKey& key);

// The default value as text (for --help).
std::string default_text(const ConfigKey& key);

// Sets one key from flag text ("true"/"false" for a switch); errors name
// the flag and the value.
Status set_from_text(const ConfigKey& key, const std::string& text, SchedulerConfig* config);

// Reads a TOML file over *config. Unknown keys and wrong types are errors
// naming the file, line and key.
Status apply_toml_file(const std::string& path, SchedulerConfig* config);

// The same from TOML text (`source` names it in errors).
Status apply_toml_text(const std::string& text, const std::string& source, SchedulerConfig* config);

}  // namespace dancemoe::scheduler
