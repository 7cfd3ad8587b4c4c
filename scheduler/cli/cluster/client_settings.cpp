#include "scheduler/cli/cluster/client_settings.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <filesystem>

#include "common/base/file_util.h"
#include "common/net/curve_keys.h"
#include "common/net/endpoint.h"

namespace dancemoe::cli {
namespace {

constexpr const char* kDefaultScheduler = "tcp://127.0.0.1:5550";

struct FileSettings {
  std::string scheduler;
  std::string key;
  std::string scheduler_key;
  std::optional<bool> insecure;
};

// The config file's path, and whether it must exist.
std::optional<std::pair<std::filesystem::path, bool>> config_path(const Environment& env) {
  if (const char* named = env("DANCEMOE_CONFIG"); named != nullptr && *named != '\0') {
    return std::make_pair(std::filesystem::path(named), true);
  }
  if (const char* xdg = env("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::make_pair(std::filesystem::path(xdg) / "dancemoe" / "cli.toml", false);
  }
  if (const char* home = env("HOME"); home != nullptr && *home != '\0') {
    return std::make_pair(std::filesystem::path(home) / ".config" / "dancemoe" / "cli.toml", false);
  }
  return std::nullopt;
}

Result<FileSettings> read_config(const Environment& env) {
  FileSettings out;
  const auto where = config_path(env);
  if (!where) return out;
  const auto& [path, required] = *where;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (required) return not_found(path.string() + " ($DANCEMOE_CONFIG): no such file");
    return out;
  }
  DMOE_ASSIGN_OR_RETURN(const std::string text, read_file(path, 1 << 20));
  toml::table table;
  try {
    table = toml::parse(text, path.string());
  } catch (const toml::parse_error& e) {
    return invalid_argument(path.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                            std::string(e.description()));
  }
  // Paths in the file are relative to it, so the file can sit beside the keys.
  auto file_path = [&](const std::string& value) {
    const std::filesystem::path p(value);
    return p.is_absolute() ? value : (path.parent_path() / p).string();
  };
  for (auto&& [name, node] : table) {
    const std::string key(name.str());
    const std::string at =
        path.string() + ":" + std::to_string(node.source().begin.line) + ": key '" + key + "'";
    if (key == "insecure") {
      if (!node.is_boolean()) return invalid_argument(at + ": expected true or false");
      out.insecure = *node.value<bool>();
      continue;
    }
    if (key != "scheduler" && key != "key" && key != "scheduler_key") {
      return invalid_argument(at +
                              " is not a client setting (known: scheduler, key, "
                              "scheduler_key, insecure)");
    }
    if (!node.is_string()) return invalid_argument(at + ": expected a string");
    const std::string value = *node.value<std::string>();
    if (key == "scheduler") out.scheduler = value;
    if (key == "key") out.key = file_path(value);
    if (key == "scheduler_key") out.scheduler_key = file_path(value);
  }
  return out;
}

std::string first_of(const std::string& flag, const char* env_value, const std::string& file) {
  if (!flag.empty()) return flag;
  if (env_value != nullptr && *env_value != '\0') return env_value;
  return file;
}

}  // namespace

Result<ClientSettings> resolve_client_settings(const ClientFlags& flags,
                                               const Environment& env_in) {
  const Environment env = env_in ? env_in : [](const char* name) { return std::getenv(name); };
  DMOE_ASSIGN_OR_RETURN(const FileSettings file, read_config(env));
  ClientSettings out;
  out.scheduler = first_of(flags.scheduler, env("DANCEMOE_SCHEDULER"), file.scheduler);
  if (out.scheduler.empty()) out.scheduler = kDefaultScheduler;
  {
    const char* env_scheduler = env("DANCEMOE_SCHEDULER");
    const std::string source =
        !flags.scheduler.empty()                               ? "--scheduler"
        : (env_scheduler != nullptr && *env_scheduler != '\0') ? "DANCEMOE_SCHEDULER"
        : !file.scheduler.empty() ? "scheduler in " + config_path(env)->first.string()
                                  : "--scheduler";
    DMOE_RETURN_IF_ERROR(net::parse_tcp_endpoint(source, out.scheduler).status());
  }
  out.key_file = first_of(flags.key, env("DANCEMOE_KEY"), file.key);
  const std::string scheduler_key =
      first_of(flags.scheduler_key, env("DANCEMOE_SCHEDULER_KEY"), file.scheduler_key);
  // Insecure or not is decided by the first source that says anything about
  // security, so a key on the command line beats `insecure = true` in the file.
  const char* env_insecure = env("DANCEMOE_INSECURE");
  auto set = [](const char* v) { return v != nullptr && *v != '\0'; };
  bool insecure = false;
  if (flags.insecure || !flags.key.empty() || !flags.scheduler_key.empty()) {
    insecure = flags.insecure;
  } else if (set(env_insecure) || set(env("DANCEMOE_KEY")) || set(env("DANCEMOE_SCHEDULER_KEY"))) {
    insecure = set(env_insecure) && std::string(env_insecure) == "1";
  } else {
    insecure = file.insecure.value_or(false);
  }
  if (insecure) return out;
  if (out.key_file.empty() || scheduler_key.empty()) {
    return invalid_argument(
        std::string("no ") + (out.key_file.empty() ? "key" : "scheduler key") +
        " to talk to the scheduler with: pass --key FILE.key and --scheduler-key FILE.pub (or "
        "set DANCEMOE_KEY and DANCEMOE_SCHEDULER_KEY, or key and scheduler_key in "
        "~/.config/dancemoe/cli.toml); --insecure talks to a scheduler started with --insecure");
  }
  DMOE_ASSIGN_OR_RETURN(const net::CurveKeyPair own,
                        net::read_secret_key_file(out.key_file).with_context("--key"));
  DMOE_ASSIGN_OR_RETURN(const std::string pinned,
                        net::read_public_key_file(scheduler_key).with_context("--scheduler-key"));
  out.curve = net::CurveOptions{own, pinned};
  return out;
}

}  // namespace dancemoe::cli
