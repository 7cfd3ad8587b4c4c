// `dancemoe-scheduler`: the global scheduler daemon (DESIGN.md §5-8).
//
//   dancemoe-scheduler --model DIR --secret-key FILE --nodes-keys DIR --operator-keys DIR
//                      [--config FILE.toml] [--control tcp://*:5550]
//                      [--db FILE] [--cluster-id ID] [--interval S]
//                      [--http 127.0.0.1:8090|off] ... | --insecure
//
// The dashboard, its JSON API and /metrics are served on --http
// (scheduler/http/http_endpoint.h) by a pool of threads that reach the
// service only through its inbox (service_inbox.h).
//
// Every setting is a TOML key and a flag (scheduler/config/scheduler_config.h);
// --help lists them with units and defaults. Exit codes, as the node's: 0
// after a clean stop (SIGTERM/SIGINT), 1 when it cannot start (a bad flag,
// configuration or model, a database or port it cannot use, a key).
// --doctor checks the set-up instead of starting (daemon/scheduler_doctor.h).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <map>
#include <string>

#include "common/net/curve_keys.h"
#include "scheduler/config/scheduler_config.h"
#include "scheduler/daemon/control_server.h"
#include "scheduler/daemon/scheduler_doctor.h"
#include "scheduler/daemon/service.h"
#include "scheduler/http/http_endpoint.h"
#include "scheduler/store/store.h"

namespace {

using namespace dancemoe;
using namespace dancemoe::scheduler;

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "dancemoe-scheduler: %s\n", message.c_str());
  return code;
}

int serve(const SchedulerConfig& config) {
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");

  Result<ModelInfo> model = ModelInfo::from_directory(config.model_dir);
  if (!model.is_ok()) return fail("--model: " + model.status().message(), 1);

  store::Store::Options store_options;
  store_options.synchronous_full = config.sync == "full";
  Result<std::unique_ptr<store::Store>> store = store::Store::open(config.db, store_options);
  if (!store.is_ok()) return fail(store.status().message(), 1);
  const Status identity = (*store)->bind_identity(model->model_id, config.cluster_id);
  if (!identity.is_ok()) return fail(identity.message(), 1);

  KeyRing keys = KeyRing::insecure();
  std::optional<net::CurveKeyPair> own_key;
  if (!config.insecure) {
    Result<net::CurveKeyPair> pair = net::read_secret_key_file(config.secret_key);
    if (!pair.is_ok()) return fail("--secret-key: " + pair.status().message(), 1);
    own_key = *pair;
    Result<KeyRing> ring = KeyRing::load(config.nodes_keys, config.operator_keys);
    if (!ring.is_ok()) return fail(ring.status().message(), 1);
    keys = std::move(*ring);
    spdlog::info("CurveZMQ on: {} admitted node key(s), {} operator key(s); public key {}",
                 keys.node_keys().size(), keys.n_operator_keys(), own_key->public_key);
  }

  // HTTP clients prove the same keys (scheduler/http/http_access.h).
  std::optional<HttpKeys> http_keys;
  if (own_key) http_keys = HttpKeys{*own_key, keys.allowlist(), keys.operator_keys()};

  SystemClock clock;
  SchedulerService service(service_options(config), *model, store->get(), &clock, std::move(keys));
  const Status started = service.start();
  if (!started.is_ok()) return fail(started.to_string(), 1);

  ControlServerOptions server_options;
  server_options.endpoint = config.control;
  server_options.max_message_bytes = config.max_message_bytes;
  server_options.curve = own_key;
  Result<std::unique_ptr<ControlServer>> server = ControlServer::bind(server_options, &service);
  if (!server.is_ok()) return fail(server.status().message(), 1);

  Result<std::unique_ptr<ServiceInbox>> inbox = ServiceInbox::create();
  if (!inbox.is_ok()) return fail(inbox.status().message(), 1);
  LoopMetrics loop_metrics;
  (*server)->set_inbox(inbox->get());
  (*server)->set_metrics(&loop_metrics);
  std::unique_ptr<HttpEndpoint> http;
  if (config.http != "off") {
    HttpEndpointOptions http_options;
    http_options.address = config.http;
    http_options.keys = http_keys;
    http_options.insecure_token = config.http_token;
    http_options.db_path = config.db;
    Result<std::unique_ptr<HttpEndpoint>> started_http =
        HttpEndpoint::start(http_options, {inbox->get(), &*model, &loop_metrics});
    if (!started_http.is_ok()) {
      return fail(started_http.status().message(),
                  started_http.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
    }
    http = std::move(*started_http);
  }

  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  spdlog::info(
      "dancemoe-scheduler serving model {} ({} MoE layers x {} experts) on {}, "
      "database {}, policy {}, interval {} s",
      model->model_id, model->moe_layers.size(), model->n_experts, (*server)->endpoint(), config.db,
      config.policy, config.interval_s);
  if (http) {
    spdlog::info("dashboard on http://{}/ (API /api/..., metrics /metrics; {})",
                 http->bound_address(),
                 http_keys ? "key tokens: members read, operators act; local readers need none"
                 : config.http_token.empty() ? "local readers only, no keys (--insecure)"
                                             : "the --http-token grants everything (--insecure)");
  }
  if (!config.ready_file.empty()) {
    const Status ready = write_ready_file(config.ready_file, (*server)->endpoint(),
                                          http ? http->bound_address() : std::string());
    if (!ready.is_ok()) return fail(ready.message(), 1);
  }
  const Status ran = (*server)->run(g_stop);
  if (!ran.is_ok()) return fail(ran.to_string(), 1);
  // The loop only stops between messages: no transaction is open here.
  // The endpoint goes first: its requests wait on the loop's inbox, which
  // run() closed, so they end at once.
  http.reset();
  server->reset();
  store->reset();
  spdlog::info("dancemoe-scheduler stopped; database closed cleanly");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "dancemoe-scheduler: collects expert-activation statistics from every node, recomputes "
      "expert placement and orchestrates migrations.\n"
      "Every setting below is also a key of the --config TOML file (same name with '_' for "
      "'-'); flags override the file."};
  app.set_version_flag("--version", std::string("dancemoe-scheduler 0.1.0"));
  std::string config_file;
  app.add_option("--config", config_file, "TOML file with any of the settings below");
  std::map<std::string, std::string> flag_values;
  std::map<std::string, CLI::Option*> flags;
  for (const ConfigKey& key : config_keys()) {
    const std::string help =
        std::string(key.help) +
        " [default: " + (default_text(key).empty() ? std::string("none") : default_text(key)) + "]";
    if (std::holds_alternative<bool SchedulerConfig::*>(key.field)) {
      // A switch: `--insecure` alone means true.
      flags[key.name] = app.add_flag(flag_name(key) + "{true}", flag_values[key.name], help);
      continue;
    }
    const char* type = std::holds_alternative<double SchedulerConfig::*>(key.field)    ? "NUMBER"
                       : std::holds_alternative<int64_t SchedulerConfig::*>(key.field) ? "INT"
                                                                                       : "TEXT";
    flags[key.name] = app.add_option(flag_name(key), flag_values[key.name], help)->type_name(type);
  }
  bool doctor = false;
  app.add_flag("--doctor", doctor,
               "check this machine for a scheduler with this configuration (model, database, "
               "port, keys), print one line per check and exit: 0 nothing failed, 1 a check "
               "failed; changes nothing");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help / --version: 0
  }

  SchedulerConfig config;
  Status configured = Status::ok();
  if (!config_file.empty()) configured = apply_toml_file(config_file, &config);
  for (const ConfigKey& key : config_keys()) {
    if (!configured.is_ok() || flags[key.name]->count() == 0) continue;
    configured = set_from_text(key, flag_values[key.name], &config);
  }
  if (configured.is_ok()) configured = config.validate();
  if (doctor) {
    DoctorReport report;
    if (configured.is_ok()) {
      report = check_scheduler(config);
    } else {
      report.fail("config", configured.message(),
                  "dancemoe-scheduler --help lists the settings and their ranges");
    }
    std::fputs(report.format().c_str(), stdout);
    return report.failed() ? 1 : 0;
  }
  if (!configured.is_ok()) return fail(configured.message(), 1);
  return serve(config);
}
