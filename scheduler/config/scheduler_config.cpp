#include "scheduler/config/scheduler_config.h"

#include <toml++/toml.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "scheduler/placement/policy.h"

namespace dancemoe::scheduler {
namespace {

using C = SchedulerConfig;

const std::array<ConfigKey, 22> kKeys = {{
    {"model", "model directory (HuggingFace layout; only config.json and headers are read)",
     &C::model_dir},
    {"control", "ZeroMQ control endpoint nodes and the CLI connect to", &C::control},
    {"db", "SQLite database file (created if missing)", &C::db},
    {"cluster_id", "cluster id; envelopes with another cluster id are refused", &C::cluster_id},
    {"interval", "placement period, seconds", &C::interval_s},
    {"heartbeat_interval", "heartbeat period told to nodes, seconds", &C::heartbeat_interval_s},
    {"heartbeat_misses", "missed heartbeats after which a node is marked down",
     &C::heartbeat_misses},
    {"report_interval", "activation report window told to nodes, seconds", &C::report_interval_s},
    {"policy", "placement policy (see `dancemoe placement policies`)", &C::policy},
    {"horizon", "gate horizon H, seconds (0: the placement period)", &C::horizon_s},
    {"prepare_timeout", "seconds every node has to load a new version before it is aborted",
     &C::prepare_timeout_s},
    {"cold_start_settle", "seconds without a new node before the first placement of a new cluster",
     &C::cold_start_settle_s},
    {"default_remote_penalty",
     "delta[n], seconds, for a node that has not measured both local and remote calls",
     &C::default_remote_penalty_s},
    {"default_load_bandwidth", "load speed, bytes/s, for a device that reports none",
     &C::default_load_bytes_per_s},
    {"raw_retention", "seconds raw reports are kept before being rolled up", &C::raw_retention_s},
    {"rollup_bucket", "roll-up bucket length, seconds", &C::rollup_bucket_s},
    {"rollup_retention", "seconds roll-up buckets, decisions and migrations are kept",
     &C::rollup_retention_s},
    {"retention_check", "seconds between retention passes", &C::retention_check_s},
    {"sync", "SQLite durability: normal (survives kill -9) or full (survives power loss)",
     &C::sync},
    {"max_message_bytes", "largest inbound message accepted, bytes", &C::max_message_bytes},
    {"ready_file", "write {\"control\": ENDPOINT} here once serving", &C::ready_file},
    {"log_level", "trace, debug, info, warn, error or off", &C::log_level},
}};

std::string format_double(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

Status positive(double v, const char* key) {
  if (!std::isfinite(v) || v <= 0) {
    return invalid_argument(std::string(key) + ": expected a positive number, got " +
                            format_double(v));
  }
  return Status::ok();
}

Status non_negative(double v, const char* key) {
  if (!std::isfinite(v) || v < 0) {
    return invalid_argument(std::string(key) + ": expected a number >= 0, got " + format_double(v));
  }
  return Status::ok();
}

}  // namespace

std::span<const ConfigKey> config_keys() { return kKeys; }

std::string flag_name(const ConfigKey& key) {
  std::string flag = std::string("--") + key.name;
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

std::string default_text(const ConfigKey& key) {
  const SchedulerConfig defaults;
  return std::visit(
      [&defaults](auto member) -> std::string {
        const auto& value = defaults.*member;
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>) {
          return value;
        } else if constexpr (std::is_same_v<std::decay_t<decltype(value)>, double>) {
          return format_double(value);
        } else {
          return std::to_string(value);
        }
      },
      key.field);
}

Status set_from_text(const ConfigKey& key, const std::string& text, SchedulerConfig* config) {
  const std::string flag = flag_name(key);
  if (auto* s = std::get_if<std::string SchedulerConfig::*>(&key.field)) {
    config->** s = text;
    return Status::ok();
  }
  errno = 0;
  char* end = nullptr;
  if (auto* d = std::get_if<double SchedulerConfig::*>(&key.field)) {
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value)) {
      return invalid_argument(flag + ": expected a number, got '" + text + "'");
    }
    config->** d = value;
    return Status::ok();
  }
  auto* i = std::get_if<int64_t SchedulerConfig::*>(&key.field);
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) {
    return invalid_argument(flag + ": expected an integer, got '" + text + "'");
  }
  config->** i = value;
  return Status::ok();
}

Status apply_toml_text(const std::string& text, const std::string& source,
                       SchedulerConfig* config) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return invalid_argument(source + ":" + std::to_string(e.source().begin.line) + ": " +
                            std::string(e.description()));
  }
  for (auto&& [toml_key, node] : table) {
    const std::string name(toml_key.str());
    const std::string where =
        source + ":" + std::to_string(node.source().begin.line) + ": key '" + name + "'";
    const ConfigKey* key = nullptr;
    for (const ConfigKey& k : kKeys) {
      if (name == k.name) key = &k;
    }
    if (key == nullptr) {
      std::string known;
      for (const ConfigKey& k : kKeys) known += (known.empty() ? "" : ", ") + std::string(k.name);
      return invalid_argument(where + " is not a scheduler setting (known: " + known + ")");
    }
    if (auto* s = std::get_if<std::string SchedulerConfig::*>(&key->field)) {
      if (!node.is_string()) return invalid_argument(where + ": expected a string");
      config->** s = *node.value<std::string>();
    } else if (auto* d = std::get_if<double SchedulerConfig::*>(&key->field)) {
      if (!node.is_number()) return invalid_argument(where + ": expected a number");
      config->** d = *node.value<double>();
    } else {
      auto* i = std::get_if<int64_t SchedulerConfig::*>(&key->field);
      if (!node.is_integer()) return invalid_argument(where + ": expected an integer");
      config->** i = *node.value<int64_t>();
    }
  }
  return Status::ok();
}

Status apply_toml_file(const std::string& path, SchedulerConfig* config) {
  std::ifstream file(path);
  if (!file) return invalid_argument(path + ": cannot open the config file for reading");
  std::stringstream text;
  text << file.rdbuf();
  return apply_toml_text(text.str(), path, config);
}

Status SchedulerConfig::validate() const {
  if (model_dir.empty()) {
    return invalid_argument("--model / model: the model directory is required");
  }
  if (control.empty()) return invalid_argument("--control / control: expected an endpoint");
  if (db.empty()) return invalid_argument("--db / db: expected a file path");
  if (cluster_id.empty() || cluster_id.size() > 256) {
    return invalid_argument("--cluster-id / cluster_id: expected 1 to 256 characters");
  }
  DMOE_RETURN_IF_ERROR(positive(interval_s, "--interval / interval"));
  DMOE_RETURN_IF_ERROR(positive(heartbeat_interval_s, "--heartbeat-interval"));
  DMOE_RETURN_IF_ERROR(positive(report_interval_s, "--report-interval"));
  // Both go to nodes as uint32 milliseconds.
  if (heartbeat_interval_s > 86400 || report_interval_s > 86400) {
    return invalid_argument("--heartbeat-interval and --report-interval: at most 86400 s");
  }
  if (heartbeat_misses < 1 || heartbeat_misses > 1000) {
    return invalid_argument("--heartbeat-misses: expected 1 to 1000, got " +
                            std::to_string(heartbeat_misses));
  }
  if (placement::find_policy(policy) == nullptr) {
    return invalid_argument("--policy / policy: unknown placement policy '" + policy +
                            "'; known policies: " + placement::policy_names());
  }
  DMOE_RETURN_IF_ERROR(non_negative(horizon_s, "--horizon / horizon"));
  DMOE_RETURN_IF_ERROR(positive(prepare_timeout_s, "--prepare-timeout"));
  DMOE_RETURN_IF_ERROR(non_negative(cold_start_settle_s, "--cold-start-settle"));
  DMOE_RETURN_IF_ERROR(non_negative(default_remote_penalty_s, "--default-remote-penalty"));
  DMOE_RETURN_IF_ERROR(positive(default_load_bytes_per_s, "--default-load-bandwidth"));
  DMOE_RETURN_IF_ERROR(non_negative(raw_retention_s, "--raw-retention"));
  DMOE_RETURN_IF_ERROR(positive(rollup_bucket_s, "--rollup-bucket"));
  DMOE_RETURN_IF_ERROR(non_negative(rollup_retention_s, "--rollup-retention"));
  DMOE_RETURN_IF_ERROR(positive(retention_check_s, "--retention-check"));
  if (sync != "normal" && sync != "full") {
    return invalid_argument("--sync / sync: expected normal or full, got '" + sync + "'");
  }
  if (max_message_bytes < (int64_t{64} << 10) || max_message_bytes > (int64_t{256} << 20)) {
    return invalid_argument("--max-message-bytes: expected 65536 to 268435456, got " +
                            std::to_string(max_message_bytes));
  }
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  bool level_ok = false;
  for (const char* level : kLevels) level_ok = level_ok || log_level == level;
  if (!level_ok) {
    return invalid_argument("--log-level: expected trace, debug, info, warn, error or off, got '" +
                            log_level + "'");
  }
  return Status::ok();
}

}  // namespace dancemoe::scheduler
