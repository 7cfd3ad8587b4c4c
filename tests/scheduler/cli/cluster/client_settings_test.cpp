#include "scheduler/cli/cluster/client_settings.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>

#include "common/net/curve_keys.h"
#include "tests/support/paths.h"

namespace dancemoe::cli {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  Environment get() const {
    return [this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

}  // namespace

TEST_CASE("client settings: flags, then the environment, then cli.toml, then the defaults") {
  testing::TempDir dir("client-settings");
  const auto op = net::write_key_pair(dir.path(), "op");
  const auto other = net::write_key_pair(dir.path(), "other");
  const auto scheduler = net::write_key_pair(dir.path(), "scheduler");
  REQUIRE(op.is_ok());
  REQUIRE(other.is_ok());
  REQUIRE(scheduler.is_ok());
  const std::string op_key = (dir.path() / "op.key").string();
  const std::string pinned = (dir.path() / "scheduler.pub").string();
  Env env;
  env.vars["HOME"] = (dir.path() / "home").string();

  // Nothing anywhere: a clear error saying every way to give a key.
  auto none = resolve_client_settings({}, env.get());
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.status().message().find("--key FILE.key and --scheduler-key FILE.pub") !=
        std::string::npos);
  CHECK(none.status().message().find("DANCEMOE_KEY") != std::string::npos);
  CHECK(none.status().message().find("cli.toml") != std::string::npos);

  // The user's config file (~/.config/dancemoe/cli.toml), paths relative to it.
  std::filesystem::create_directories(dir.path() / "home/.config/dancemoe");
  std::filesystem::copy_file(dir.path() / "op.key", dir.path() / "home/.config/dancemoe/me.key");
  std::filesystem::permissions(
      dir.path() / "home/.config/dancemoe/me.key",
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::ofstream(dir.path() / "home/.config/dancemoe/cli.toml")
      << "scheduler = \"tcp://sched.lab:5550\"\nkey = \"me.key\"\nscheduler_key = \"" << pinned
      << "\"\n";
  auto from_file = resolve_client_settings({}, env.get());
  INFO(from_file.status().to_string());
  REQUIRE(from_file.is_ok());
  CHECK(from_file->scheduler == "tcp://sched.lab:5550");
  REQUIRE(from_file->curve.has_value());
  CHECK(from_file->curve->own.public_key == op->public_key);
  CHECK(from_file->curve->server_key == scheduler->public_key);

  // The environment beats the file; flags beat both.
  env.vars["DANCEMOE_SCHEDULER"] = "tcp://env:1";
  env.vars["DANCEMOE_KEY"] = (dir.path() / "other.key").string();
  auto from_env = resolve_client_settings({}, env.get());
  REQUIRE(from_env.is_ok());
  CHECK(from_env->scheduler == "tcp://env:1");
  CHECK(from_env->curve->own.public_key == other->public_key);
  ClientFlags flags;
  flags.scheduler = "tcp://flag:2";
  flags.key = op_key;
  auto from_flags = resolve_client_settings(flags, env.get());
  REQUIRE(from_flags.is_ok());
  CHECK(from_flags->scheduler == "tcp://flag:2");
  CHECK(from_flags->curve->own.public_key == op->public_key);

  // --insecure: plain; a key flag beats `insecure = true` in a file.
  flags = {};
  flags.insecure = true;
  auto insecure = resolve_client_settings(flags, env.get());
  REQUIRE(insecure.is_ok());
  CHECK_FALSE(insecure->curve.has_value());
  env.vars.erase("DANCEMOE_KEY");
  env.vars.erase("DANCEMOE_SCHEDULER");
  std::ofstream(dir.path() / "home/.config/dancemoe/cli.toml") << "insecure = true\n";
  CHECK_FALSE(resolve_client_settings({}, env.get())->curve.has_value());
  flags = {};
  flags.key = op_key;
  flags.scheduler_key = pinned;
  CHECK(resolve_client_settings(flags, env.get())->curve.has_value());
  CHECK(resolve_client_settings({}, env.get())->scheduler == "tcp://127.0.0.1:5550");
}

TEST_CASE("client settings: bad files are errors naming the file") {
  testing::TempDir dir("client-settings-bad");
  Env env;
  env.vars["DANCEMOE_CONFIG"] = (dir.path() / "missing.toml").string();
  CHECK(resolve_client_settings({}, env.get()).status().message().find("missing.toml") !=
        std::string::npos);
  env.vars["DANCEMOE_CONFIG"] = (dir.path() / "cli.toml").string();
  std::ofstream(dir.path() / "cli.toml") << "colour = \"blue\"\n";
  CHECK(resolve_client_settings({}, env.get())
            .status()
            .message()
            .find("key 'colour' is not a client setting") != std::string::npos);
  ClientFlags flags;
  flags.key = (dir.path() / "none.key").string();
  flags.scheduler_key = (dir.path() / "none.pub").string();
  env.vars.erase("DANCEMOE_CONFIG");
  CHECK(resolve_client_settings(flags, env.get()).status().message().find("--key") == 0);
}

}  // namespace dancemoe::cli
