// Scheduler configuration: TOML file, flags over the file, validation.
#include "scheduler/config/scheduler_config.h"

#include <doctest/doctest.h>

#include <set>

namespace dancemoe::scheduler {

TEST_CASE("scheduler config: every key has a flag of the same name and a default") {
  std::set<std::string> names;
  for (const ConfigKey& key : config_keys()) {
    CHECK(names.insert(key.name).second);
    CHECK(flag_name(key).rfind("--", 0) == 0);
    CHECK(flag_name(key).find('_') == std::string::npos);
  }
  CHECK(names.count("heartbeat_misses") == 1);
  const ConfigKey* interval = nullptr;
  for (const ConfigKey& key : config_keys()) {
    if (std::string(key.name) == "interval") interval = &key;
  }
  REQUIRE(interval != nullptr);
  CHECK(default_text(*interval) == "300");
  CHECK(std::string(interval->help).find("seconds") != std::string::npos);
}

TEST_CASE("scheduler config: a TOML file sets keys -- errors name the line and key") {
  SchedulerConfig config;
  const std::string text =
      "model = \"/models/olmoe\"\n"
      "interval = 120\n"
      "heartbeat_misses = 5\n"
      "policy = \"dancemoe\"\n"
      "prepare_timeout = 2.5\n";
  REQUIRE(apply_toml_text(text, "s.toml", &config).is_ok());
  CHECK(config.model_dir == "/models/olmoe");
  CHECK(config.interval_s == 120.0);
  CHECK(config.effective_horizon_s() == 120.0);
  CHECK(config.heartbeat_misses == 5);
  CHECK(config.policy == "dancemoe");
  CHECK(config.prepare_timeout_s == 2.5);
  config.insecure = true;
  CHECK(config.validate().is_ok());

  Status unknown = apply_toml_text("model = \"m\"\nintervall = 3\n", "s.toml", &config);
  CHECK(unknown.message().find("s.toml:2: key 'intervall' is not a scheduler setting") == 0);
  Status type = apply_toml_text("heartbeat_misses = 2.5\n", "s.toml", &config);
  CHECK(type.message() == "s.toml:1: key 'heartbeat_misses': expected an integer");
  Status text_number = apply_toml_text("interval = \"300\"\n", "s.toml", &config);
  CHECK(text_number.message() == "s.toml:1: key 'interval': expected a number");
  Status syntax = apply_toml_text("interval = = 3\n", "s.toml", &config);
  CHECK(syntax.message().rfind("s.toml:1:", 0) == 0);
}

TEST_CASE("scheduler config: flags override the file and are checked") {
  SchedulerConfig config;
  REQUIRE(apply_toml_text("interval = 120\nmodel = \"m\"\n", "s.toml", &config).is_ok());
  for (const ConfigKey& key : config_keys()) {
    if (std::string(key.name) == "interval") {
      REQUIRE(set_from_text(key, "30", &config).is_ok());
      CHECK(set_from_text(key, "3x", &config).message() ==
            "--interval: expected a number, got '3x'");
    }
    if (std::string(key.name) == "heartbeat_misses") {
      CHECK(set_from_text(key, "1.5", &config).message() ==
            "--heartbeat-misses: expected an integer, got '1.5'");
    }
  }
  CHECK(config.interval_s == 30.0);
}

TEST_CASE("scheduler config: validation names the setting and what is expected") {
  SchedulerConfig config;
  CHECK(config.validate().message().find("--model") != std::string::npos);
  config.model_dir = "m";
  config.insecure = true;
  CHECK(config.validate().is_ok());
  config.policy = "best";
  CHECK(config.validate().message().find("unknown placement policy 'best'") != std::string::npos);
  config.policy = "optimal";
  config.interval_s = 0;
  CHECK(config.validate().message().find("--interval") != std::string::npos);
  config.interval_s = 300;
  config.sync = "sometimes";
  CHECK(config.validate().message().find("expected normal or full") != std::string::npos);
  config.sync = "full";
  config.heartbeat_misses = 0;
  CHECK(config.validate().message().find("--heartbeat-misses") != std::string::npos);
}

TEST_CASE("scheduler config: out-of-range durations are refused, naming the key") {
  SchedulerConfig config;
  config.model_dir = "m";
  config.insecure = true;
  REQUIRE(config.validate().is_ok());
  // 1e308 s overflowed the milliseconds it becomes; a heartbeat every
  // microsecond rounded to 1 ms and flooded the scheduler.
  config.interval_s = 1e308;
  CHECK(config.validate().message().find("--interval / interval: expected seconds in") == 0);
  config.interval_s = 300;
  config.heartbeat_interval_s = 1e-6;
  CHECK(config.validate().message().find("--heartbeat-interval") == 0);
  config.heartbeat_interval_s = 2;
  config.report_interval_s = 1e-9;
  CHECK(config.validate().message().find("--report-interval") == 0);
  config.report_interval_s = 10;
  config.prepare_timeout_s = 1e300;
  CHECK(config.validate().message().find("--prepare-timeout") == 0);
  config.prepare_timeout_s = 120;
  config.rollup_retention_s = 1e300;
  CHECK(config.validate().message().find("--rollup-retention") == 0);
  config.rollup_retention_s = 86400;
  config.default_load_bytes_per_s = 1e300;
  CHECK(config.validate().message().find("--default-load-bandwidth") == 0);
  config.default_load_bytes_per_s = 1e9;
  CHECK(config.validate().is_ok());
}

TEST_CASE("scheduler config: keys are required unless --insecure, and not both") {
  SchedulerConfig config;
  config.model_dir = "m";
  const std::string missing = config.validate().message();
  CHECK(missing.find("needs keys: --secret-key FILE") != std::string::npos);
  CHECK(missing.find("--insecure") != std::string::npos);
  config.secret_key = "s.key";
  config.nodes_keys = "nodes";
  CHECK(config.validate().message().find("--operator-keys") != std::string::npos);
  config.operator_keys = "operators";
  CHECK(config.validate().is_ok());
  config.insecure = true;
  CHECK(config.validate().message().find("choose keys or --insecure") != std::string::npos);
  for (const ConfigKey& key : config_keys()) {
    if (std::string(key.name) != "insecure") continue;
    CHECK(set_from_text(key, "maybe", &config).message() ==
          "--insecure: expected true or false, got 'maybe'");
    REQUIRE(set_from_text(key, "false", &config).is_ok());
    CHECK_FALSE(config.insecure);
  }
  REQUIRE(apply_toml_text("insecure = true\n", "s.toml", &config).is_ok());
  CHECK(config.insecure);
}

TEST_CASE("scheduler config: --http off loopback needs keys or, --insecure, a shared token") {
  SchedulerConfig keyed;
  keyed.model_dir = "m";
  keyed.secret_key = "s.key";
  keyed.nodes_keys = "nodes";
  keyed.operator_keys = "operators";
  keyed.http = "0.0.0.0:8090";
  CHECK(keyed.validate().is_ok());  // every request from elsewhere needs a key token
  keyed.http_token = "s3cret";
  const std::string shared = keyed.validate().message();
  CHECK(shared.find("--http-token / http_token: only for an --insecure scheduler") == 0);
  CHECK(shared.find("dancemoe keys http-token") != std::string::npos);

  SchedulerConfig insecure;
  insecure.model_dir = "m";
  insecure.insecure = true;
  insecure.http = "0.0.0.0:8090";
  CHECK(insecure.validate().message().find("set --http-token") != std::string::npos);
  insecure.http_token = "s3cret";
  CHECK(insecure.validate().is_ok());
  insecure.http = "127.0.0.1:bad";
  CHECK(insecure.validate().message().find("--http / http") == 0);
}

}  // namespace dancemoe::scheduler
