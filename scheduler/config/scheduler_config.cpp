#include "scheduler/config/scheduler_config.h"

#include <toml++/toml.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/http/listen_address.h"
#include "scheduler/placement/policy.h"

namespace dancemoe::scheduler {
namespace {

using C = SchedulerConfig;

const std::array<ConfigKey, 29> kKeys = {{
    {"model",
     "model: a HuggingFace directory or a GGUF file (only the config and headers are read)",
     &C::model_dir},
    {"control", "ZeroMQ control endpoint nodes and the CLI connect to", &C::control},
    {"db", "SQLite database file (created if missing)", &C::db},
    {"cluster_id", "cluster id; envelopes with another cluster id are refused", &C::cluster_id},
    {"expert_types",
     "expert precisions nodes may hold besides the model file's own, comma-separated (e.g. "
     "q4_K,q8_0; * for any; default: only the model file's)",
     &C::expert_types},
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
    {"secret_key", "the scheduler's CURVE secret key file (dancemoe keys generate)",
     &C::secret_key},
    {"nodes_keys",
     "directory of admitted node public keys, NAME.pub each (dancemoe nodes admit adds one)",
     &C::nodes_keys},
    {"operator_keys", "directory of operator public keys, NAME.pub each", &C::operator_keys},
    {"insecure",
     "no CurveZMQ and no keys: anyone reaching the control port may do anything (warned every "
     "minute)",
     &C::insecure},
    {"http",
     "HOST:PORT of the dashboard and its JSON API and /metrics (port 0: any free port), or off",
     &C::http},
    {"http_token",
     "--insecure only: a shared bearer token that grants every HTTP right (needed to serve "
     "another address than loopback without keys); with keys, clients send key tokens "
     "(dancemoe keys http-token)",
     &C::http_token},
}};

std::string format_double(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

constexpr double kDay = 86400.0;
constexpr double kYear = 365.0 * kDay;

// Every duration and rate has a range: beyond it a value is a typo (1e308
// seconds overflows the milliseconds it becomes; a heartbeat every
// microsecond floods the network) -- refused, naming the key.
Status in_range(double v, double lo, double hi, const char* key, const char* unit) {
  if (!std::isfinite(v) || v < lo || v > hi) {
    return invalid_argument(std::string(key) + ": expected " + unit + " in [" + format_double(lo) +
                            ", " + format_double(hi) + "], got " + format_double(v));
  }
  return Status::ok();
}

Status check_security(const SchedulerConfig& c) {
  const bool any_key = !c.secret_key.empty() || !c.nodes_keys.empty() || !c.operator_keys.empty();
  if (c.insecure) {
    if (any_key) {
      return invalid_argument(
          "--insecure with --secret-key/--nodes-keys/--operator-keys: choose keys or --insecure");
    }
    return Status::ok();
  }
  if (c.secret_key.empty() || c.nodes_keys.empty() || c.operator_keys.empty()) {
    return invalid_argument(
        "the scheduler needs keys: --secret-key FILE (its own), --nodes-keys DIR (admitted "
        "nodes) and --operator-keys DIR (operators) -- see `dancemoe keys generate` and "
        "docs/security.md -- or --insecure to run without authentication");
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
        } else if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) {
          return value ? "true" : "false";
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
  if (auto* b = std::get_if<bool SchedulerConfig::*>(&key.field)) {
    if (text != "true" && text != "false") {
      return invalid_argument(flag + ": expected true or false, got '" + text + "'");
    }
    config->** b = text == "true";
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
    } else if (auto* b = std::get_if<bool SchedulerConfig::*>(&key->field)) {
      if (!node.is_boolean()) return invalid_argument(where + ": expected true or false");
      config->** b = *node.value<bool>();
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
  const char* kSeconds = "seconds";
  DMOE_RETURN_IF_ERROR(in_range(interval_s, 0.01, kYear, "--interval / interval", kSeconds));
  // Both go to nodes as uint32 milliseconds.
  DMOE_RETURN_IF_ERROR(
      in_range(heartbeat_interval_s, 0.01, 3600, "--heartbeat-interval", kSeconds));
  DMOE_RETURN_IF_ERROR(in_range(report_interval_s, 0.01, kDay, "--report-interval", kSeconds));
  if (heartbeat_misses < 1 || heartbeat_misses > 1000) {
    return invalid_argument("--heartbeat-misses: expected 1 to 1000, got " +
                            std::to_string(heartbeat_misses));
  }
  if (placement::find_policy(policy) == nullptr) {
    return invalid_argument("--policy / policy: unknown placement policy '" + policy +
                            "'; known policies: " + placement::policy_names());
  }
  DMOE_RETURN_IF_ERROR(in_range(horizon_s, 0, kYear, "--horizon / horizon", kSeconds));
  DMOE_RETURN_IF_ERROR(in_range(prepare_timeout_s, 0.01, kDay, "--prepare-timeout", kSeconds));
  DMOE_RETURN_IF_ERROR(in_range(cold_start_settle_s, 0, kDay, "--cold-start-settle", kSeconds));
  DMOE_RETURN_IF_ERROR(
      in_range(default_remote_penalty_s, 0, 3600, "--default-remote-penalty", kSeconds));
  DMOE_RETURN_IF_ERROR(
      in_range(default_load_bytes_per_s, 1, 1e15, "--default-load-bandwidth", "bytes/s"));
  DMOE_RETURN_IF_ERROR(in_range(raw_retention_s, 0, 10 * kYear, "--raw-retention", kSeconds));
  DMOE_RETURN_IF_ERROR(in_range(rollup_bucket_s, 0.001, 30 * kDay, "--rollup-bucket", kSeconds));
  DMOE_RETURN_IF_ERROR(in_range(rollup_retention_s, 0, 10 * kYear, "--rollup-retention", kSeconds));
  DMOE_RETURN_IF_ERROR(in_range(retention_check_s, 0.01, kDay, "--retention-check", kSeconds));
  if (sync != "normal" && sync != "full") {
    return invalid_argument("--sync / sync: expected normal or full, got '" + sync + "'");
  }
  if (max_message_bytes < (int64_t{64} << 10) || max_message_bytes > (int64_t{256} << 20)) {
    return invalid_argument("--max-message-bytes: expected 65536 to 268435456, got " +
                            std::to_string(max_message_bytes));
  }
  if (http != "off") {
    Result<http::ListenAddress> address = http::parse_listen_address(http, "--http / http");
    if (!address.is_ok()) return address.status();
    if (!insecure && !http_token.empty()) {
      return invalid_argument(
          "--http-token / http_token: only for an --insecure scheduler; with keys, each member "
          "and operator reads (and operators act) with the key token of their own key "
          "(dancemoe keys http-token), so no shared secret is needed");
    }
    if (insecure && !http::is_loopback_host(address->host) && http_token.empty()) {
      return invalid_argument(
          "--http / http: " + http +
          " is reachable from other machines and --insecure leaves no keys to check; set "
          "--http-token (the dashboard asks for it) or serve a loopback address "
          "(127.0.0.1:PORT) and reach it over ssh -L");
    }
  }
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  bool level_ok = false;
  for (const char* level : kLevels) level_ok = level_ok || log_level == level;
  if (!level_ok) {
    return invalid_argument("--log-level: expected trace, debug, info, warn, error or off, got '" +
                            log_level + "'");
  }
  return check_security(*this);
}

}  // namespace dancemoe::scheduler
