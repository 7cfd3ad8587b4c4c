#include "tests/support/scheduler_process.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/model/checkpoint.h"
#include "common/model/synthetic/synthetic_model.h"
#include "common/net/zmq_transport.h"
#include "tests/support/paths.h"

namespace dancemoe::testing {

const TinyModel& tiny_model() {
  static TempDir dir("tiny-model");
  static const TinyModel model = [] {
    TinyModel m;
    m.dir = dir.path() / "model";
    SyntheticModelSpec spec;
    spec.preset = "tiny";
    spec.write_tokenizer = false;
    REQUIRE(write_synthetic_model(spec, m.dir).is_ok());
    auto checkpoint = Checkpoint::open(m.dir);
    REQUIRE(checkpoint.is_ok());
    m.model_id = (*checkpoint)->model_id();
    return m;
  }();
  return model;
}

SchedulerProcess::SchedulerProcess(std::string binary, std::filesystem::path dir,
                                   std::vector<std::string> args, int port)
    : binary_(std::move(binary)), dir_(std::move(dir)), args_(std::move(args)), port_(port) {
  if (std::find(args_.begin(), args_.end(), "--insecure") == args_.end()) {
    keys_ = std::make_unique<ClusterKeys>(dir_ / "keys");
  }
}

ClusterKeys& SchedulerProcess::keys() {
  REQUIRE(keys_ != nullptr);
  return *keys_;
}

std::optional<net::CurveOptions> SchedulerProcess::node_curve(const std::string& name) {
  if (!keys_) return std::nullopt;
  const net::CurveKeyPair& pair = keys_->pair(name);
  if (admitted_.insert(name).second) {
    if (process_ && process_->running() && !endpoint_.empty()) {
      auto admitted =
          scheduler_query(*this, "admit", {{"name", name}, {"public_key", pair.public_key}});
      INFO(admitted.status().to_string());
      REQUIRE(admitted.is_ok());
    } else {
      keys_->admit_file(name);
    }
  }
  return keys_->to_scheduler(pair);
}

std::optional<net::CurveOptions> SchedulerProcess::operator_curve() const {
  if (!keys_) return std::nullopt;
  return keys_->to_scheduler(keys_->operator_pair());
}

std::vector<std::string> SchedulerProcess::node_args(const std::string& name) {
  if (!keys_) return {"--insecure"};
  (void)node_curve(name);
  return keys_->node_args(name);
}

std::vector<std::string> SchedulerProcess::cli_command(std::vector<std::string> argv) const {
  argv.push_back("--scheduler");
  argv.push_back(endpoint_);
  for (const std::string& a : cli_args()) argv.push_back(a);
  return argv;
}

std::vector<std::string> SchedulerProcess::cli_args() const {
  if (!keys_) return {"--insecure"};
  return keys_->operator_cli_args();
}

void SchedulerProcess::start() {
  const std::filesystem::path ready = dir_ / ("ready-" + std::to_string(++starts_) + ".json");
  // The tiny model unless the test names its own with --model.
  const bool own_model = std::find(args_.begin(), args_.end(), "--model") != args_.end();
  std::vector<std::string> argv = {
      binary_,
      "--model",
      own_model ? std::string() : tiny_model().dir.string(),
      "--db",
      db_path().string(),
      "--control",
      port_ == 0 ? "tcp://127.0.0.1:*" : "tcp://127.0.0.1:" + std::to_string(port_),
      "--ready-file",
      ready.string(),
      "--log-level",
      "debug"};
  if (own_model) argv.erase(argv.begin() + 1, argv.begin() + 3);
  if (keys_) {
    const std::vector<std::string> key_args = keys_->scheduler_args();
    argv.insert(argv.end(), key_args.begin(), key_args.end());
  }
  // The dashboard on a free port, so that schedulers of parallel tests
  // never compete for the default one.
  if (std::find(args_.begin(), args_.end(), "--http") == args_.end()) {
    argv.insert(argv.end(), {"--http", "127.0.0.1:0"});
  }
  argv.insert(argv.end(), args_.begin(), args_.end());
  process_ = std::make_unique<ChildProcess>(argv, dir_ / "scheduler.log");
  const bool ok = wait_for_file(ready, std::chrono::seconds(30));
  INFO(log());
  REQUIRE(ok);
  std::ifstream in(ready);
  nlohmann::json json;
  in >> json;
  endpoint_ = json["control"].get<std::string>();
  http_ = json.value("http", std::string());
}

void SchedulerProcess::kill() {
  if (process_) process_->kill();
}

std::optional<int> SchedulerProcess::stop() {
  if (!process_) return std::nullopt;
  return process_->stop();
}

std::string SchedulerProcess::log() const {
  std::ifstream in(dir_ / "scheduler.log");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<nlohmann::json> scheduler_query(const SchedulerProcess& scheduler, const std::string& what,
                                       const nlohmann::json& args,
                                       std::chrono::milliseconds timeout) {
  return scheduler_query(scheduler.endpoint(), what, args, timeout, scheduler.operator_curve());
}

Result<nlohmann::json> scheduler_query(const std::string& endpoint, const std::string& what,
                                       const nlohmann::json& args,
                                       std::chrono::milliseconds timeout,
                                       const std::optional<net::CurveOptions>& curve) {
  zmq::context_t context(1);
  net::SocketOptions options;
  options.curve = curve;
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t socket,
                        net::make_socket(context, zmq::socket_type::dealer, options));
  DMOE_RETURN_IF_ERROR(net::connect(socket, endpoint));
  proto::Envelope request;
  request.sender = "test";
  request.sequence = 1;
  request.body = proto::StatusRequest{what, args.dump()};
  DMOE_RETURN_IF_ERROR(net::send_message(socket, request));
  auto reply = net::receive_message(socket, timeout, false);
  if (!reply) return deadline_exceeded("no answer to " + what);
  if (!reply->envelope.is_ok()) return reply->envelope.status();
  if (const auto* e = std::get_if<proto::Error>(&reply->envelope->body)) {
    return Status(e->code, e->message);
  }
  const auto* status = std::get_if<proto::StatusReply>(&reply->envelope->body);
  if (status == nullptr) return internal_error("unexpected answer to a status query");
  return nlohmann::json::parse(status->json);
}

bool eventually(const std::function<bool()>& predicate, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace dancemoe::testing
