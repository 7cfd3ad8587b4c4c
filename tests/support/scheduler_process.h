// The real `dancemoe-scheduler` as a child process for integration tests:
// started on 127.0.0.1 (an ephemeral port, or a fixed one so that it can
// come back on the same address after a kill -9), with a database in the
// test's directory; the endpoint comes from its --ready-file. Secure unless
// `args` has --insecure: a key set (cluster_keys.h) in dir/keys, node keys
// admitted as tests ask for them (a file before the start, `nodes admit`
// after). Also the tiny synthetic model every scheduler test uses, and a
// one-shot status query.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/net/zmq_transport.h"
#include "tests/support/child_process.h"
#include "tests/support/cluster_keys.h"

namespace dancemoe::testing {

struct TinyModel {
  std::filesystem::path dir;
  std::string model_id;
};

// Written once per test process (dancemoe make-model --preset tiny's model).
const TinyModel& tiny_model();

class SchedulerProcess {
 public:
  // `binary`: DMOE_SCHEDULER_PATH. `port` 0: ephemeral. The model is the
  // tiny one unless `args` has --model. The database is
  // dir/scheduler.db; logs go to dir/scheduler.log.
  SchedulerProcess(std::string binary, std::filesystem::path dir, std::vector<std::string> args,
                   int port = 0);

  // Starts it and waits for the ready file (REQUIREs success).
  void start();
  void kill();                // SIGKILL
  std::optional<int> stop();  // SIGTERM
  bool running() { return process_ && process_->running(); }

  const std::string& endpoint() const { return endpoint_; }
  // HOST:PORT of its HTTP endpoint (dashboard, /api, /metrics); empty with --http off.
  const std::string& http() const { return http_; }
  std::filesystem::path db_path() const { return dir_ / "scheduler.db"; }
  std::string log() const;

  bool secure() const { return keys_ != nullptr; }
  // The key set (REQUIREs a secure scheduler).
  ClusterKeys& keys();
  // Makes node NAME's key and has the scheduler admit it (once); nullopt
  // when insecure. The CURVE options of a client using NAME's key.
  std::optional<net::CurveOptions> node_curve(const std::string& name);
  // The operator's client options (nullopt when insecure).
  std::optional<net::CurveOptions> operator_curve() const;
  // Flags of an attached dancemoe-node NAME (keys, or --insecure).
  std::vector<std::string> node_args(const std::string& name);
  // Flags of the CLI as the operator (keys, or --insecure).
  std::vector<std::string> cli_args() const;
  // `argv` (the CLI and its command) + --scheduler ENDPOINT + cli_args().
  std::vector<std::string> cli_command(std::vector<std::string> argv) const;

 private:
  std::string binary_;
  std::filesystem::path dir_;
  std::vector<std::string> args_;
  int port_;
  int starts_ = 0;
  std::string endpoint_;
  std::string http_;
  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<ClusterKeys> keys_;  // null with --insecure
  std::set<std::string> admitted_;
};

// One StatusRequest on a fresh DEALER socket (with `curve`, or plain); the
// reply's JSON, or the Error's status, or deadline_exceeded.
Result<nlohmann::json> scheduler_query(
    const std::string& endpoint, const std::string& what,
    const nlohmann::json& args = nlohmann::json::object(),
    std::chrono::milliseconds timeout = std::chrono::seconds(10),
    const std::optional<net::CurveOptions>& curve = std::nullopt);
// The same as the scheduler's operator.
Result<nlohmann::json> scheduler_query(
    const SchedulerProcess& scheduler, const std::string& what,
    const nlohmann::json& args = nlohmann::json::object(),
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Polls `predicate` every 20 ms up to `timeout`.
bool eventually(const std::function<bool()>& predicate, std::chrono::milliseconds timeout);

}  // namespace dancemoe::testing
