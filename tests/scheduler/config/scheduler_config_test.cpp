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

}  // namespace dancemoe::scheduler
