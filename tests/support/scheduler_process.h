// The real `dancemoe-scheduler` as a child process for integration tests:
// started on 127.0.0.1 (an ephemeral port, or a fixed one so that it can
// come back on the same address after a kill -9), with a database in the
// test's directory; the endpoint comes from its --ready-file. Also the tiny
// synthetic model every scheduler test uses, and a one-shot status query.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "tests/support/child_process.h"

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
  std::filesystem::path db_path() const { return dir_ / "scheduler.db"; }
  std::string log() const;

 private:
  std::string binary_;
  std::filesystem::path dir_;
  std::vector<std::string> args_;
  int port_;
  int starts_ = 0;
  std::string endpoint_;
  std::unique_ptr<ChildProcess> process_;
};

// One StatusRequest on a fresh DEALER socket; the reply's JSON, or the
// Error's status, or deadline_exceeded.
Result<nlohmann::json> scheduler_query(
    const std::string& endpoint, const std::string& what,
    const nlohmann::json& args = nlohmann::json::object(),
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Polls `predicate` every 20 ms up to `timeout`.
bool eventually(const std::function<bool()>& predicate, std::chrono::milliseconds timeout);

}  // namespace dancemoe::testing
