#include "scheduler/cli/demo/demo_cluster.h"

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/net/curve_keys.h"
#include "common/net/key_token.h"
#include "scheduler/cli/cluster/scheduler_client.h"

namespace dancemoe::cli {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

Result<json> read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return not_found(path.string() + ": cannot open");
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return invalid_argument(path.string() + ": not valid JSON");
  return j;
}

// Waits for a --ready-file while the process runs.
Status wait_ready_file(ChildProcess& process, const std::filesystem::path& file,
                       const std::string& what, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    std::error_code ec;
    if (std::filesystem::exists(file, ec) && std::filesystem::file_size(file, ec) > 0) {
      return Status::ok();
    }
    if (!process.running()) return unavailable(what + " exited during start-up");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return deadline_exceeded(what + " not ready after " + std::to_string(timeout.count()) + " s");
}

}  // namespace

DemoCluster::DemoCluster(std::filesystem::path model_dir, std::filesystem::path work_dir)
    : model_dir_(std::move(model_dir)), work_dir_(std::move(work_dir)) {}

DemoCluster::~DemoCluster() { stop(); }

std::string DemoCluster::log_tail(const ChildProcess& process) const {
  const std::string log = process.log();
  size_t start = log.size();
  for (int lines = 0; start > 0 && lines < 12; --start) {
    if (log[start - 1] == '\n') ++lines;
  }
  return log.substr(start);
}

Status DemoCluster::make_keys(const std::vector<std::string>& node_ids) {
  const std::filesystem::path dir = keys_dir();
  DMOE_ASSIGN_OR_RETURN(const net::CurveKeyPair scheduler, net::write_key_pair(dir, "scheduler"));
  DMOE_ASSIGN_OR_RETURN(const net::CurveKeyPair op, net::write_key_pair(dir, "operator"));
  DMOE_ASSIGN_OR_RETURN(operator_token_, net::make_key_token(op, scheduler.public_key));
  std::filesystem::create_directories(dir / "operators");
  std::filesystem::create_directories(dir / "nodes");
  DMOE_RETURN_IF_ERROR(net::write_public_key_file(dir / "operators", "operator", op.public_key));
  for (const std::string& id : node_ids) {
    DMOE_ASSIGN_OR_RETURN(const net::CurveKeyPair node, net::write_key_pair(dir, id));
    DMOE_RETURN_IF_ERROR(net::write_public_key_file(dir / "nodes", id, node.public_key));
  }
  return Status::ok();
}

Status DemoCluster::start_scheduler() {
  DMOE_ASSIGN_OR_RETURN(const std::filesystem::path binary, locate_binary("dancemoe-scheduler"));
  const std::filesystem::path ready = work_dir_ / "scheduler.ready.json";
  std::vector<std::string> argv = {binary.string(),
                                   "--model",
                                   model_dir_.string(),
                                   "--control",
                                   "tcp://127.0.0.1:*",
                                   "--db",
                                   (work_dir_ / "scheduler.db").string(),
                                   "--ready-file",
                                   ready.string(),
                                   "--interval",
                                   "3600",  // rounds on demand only
                                   "--horizon",
                                   "300",
                                   "--heartbeat-interval",
                                   "0.5",
                                   "--report-interval",
                                   "1",
                                   "--cold-start-settle",
                                   "1.5",
                                   "--secret-key",
                                   (keys_dir() / "scheduler.key").string(),
                                   "--nodes-keys",
                                   (keys_dir() / "nodes").string(),
                                   "--operator-keys",
                                   (keys_dir() / "operators").string(),
                                   "--http",
                                   "127.0.0.1:0"};
  scheduler_ = std::make_unique<ChildProcess>(argv, work_dir_ / "scheduler.log");
  if (Status s = wait_ready_file(*scheduler_, ready, "the scheduler", std::chrono::seconds(30));
      !s.is_ok()) {
    return Status(s.code(), s.message() + "; its log ends with:\n" + log_tail(*scheduler_));
  }
  DMOE_ASSIGN_OR_RETURN(const json r, read_json_file(ready));
  scheduler_endpoint_ = r.value("control", std::string());
  scheduler_http_ = r.value("http", std::string());
  return Status::ok();
}

Status DemoCluster::start_nodes(const std::vector<DemoNodeSpec>& specs, int threads) {
  DMOE_ASSIGN_OR_RETURN(const std::filesystem::path binary, locate_binary("dancemoe-node"));
  for (const DemoNodeSpec& spec : specs) {
    Node node;
    node.id = spec.id;
    node.ready_file = work_dir_ / ("node-" + spec.id + ".ready.json");
    std::vector<std::string> argv = {
        binary.string(), "--model", model_dir_.string(), "--node-id", spec.id, "--scheduler",
        scheduler_endpoint_, "--experts", "tcp://127.0.0.1:*", "--http", "127.0.0.1:0",
        "--expert-memory", std::to_string(spec.expert_memory_bytes),
        // A whole new set may load beside the old one
        // (the default, half, can refuse a migration
        // that replaces most of a small node's experts).
        "--migration-headroom", std::to_string(spec.expert_memory_bytes), "--threads",
        std::to_string(threads), "--ready-file", node.ready_file.string(), "--secret-key",
        (keys_dir() / (spec.id + ".key")).string(), "--scheduler-key",
        (keys_dir() / "scheduler.pub").string()};
    node.process = std::make_unique<ChildProcess>(argv, work_dir_ / ("node-" + spec.id + ".log"));
    nodes_.push_back(std::move(node));
  }
  for (Node& node : nodes_) {
    if (Status s = wait_ready_file(*node.process, node.ready_file, "node " + node.id,
                                   std::chrono::seconds(60));
        !s.is_ok()) {
      return Status(s.code(), s.message() + "; its log ends with:\n" + log_tail(*node.process));
    }
    DMOE_ASSIGN_OR_RETURN(const json r, read_json_file(node.ready_file));
    node.http = r.value("http", std::string());
  }
  return Status::ok();
}

Result<const DemoCluster::Node*> DemoCluster::find(const std::string& id) const {
  for (const Node& n : nodes_) {
    if (n.id == id) return &n;
  }
  return not_found("no demo node '" + id + "'");
}

Result<json> DemoCluster::post(const std::string& node_id, const std::string& path,
                               const json& body) const {
  DMOE_ASSIGN_OR_RETURN(const Node* node, find(node_id));
  httplib::Client client("http://" + node->http);
  client.set_read_timeout(300, 0);
  auto res = client.Post(path, body.dump(), "application/json");
  if (!res) return unavailable("node " + node_id + " (" + node->http + "): no answer on " + path);
  json reply = json::parse(res->body, nullptr, false);
  if (res->status != 200) {
    return unavailable("node " + node_id + ": HTTP " + std::to_string(res->status) + " on " + path +
                       ": " + res->body);
  }
  if (reply.is_discarded())
    return internal_error("node " + node_id + ": " + path + " answered non-JSON");
  return reply;
}

Result<json> DemoCluster::get(const std::string& node_id, const std::string& path) const {
  DMOE_ASSIGN_OR_RETURN(const Node* node, find(node_id));
  httplib::Client client("http://" + node->http);
  client.set_read_timeout(30, 0);
  auto res = client.Get(path);
  if (!res) return unavailable("node " + node_id + " (" + node->http + "): no answer on " + path);
  json reply = json::parse(res->body, nullptr, false);
  if (res->status != 200 || reply.is_discarded()) {
    return unavailable("node " + node_id + ": HTTP " + std::to_string(res->status) + " on " + path +
                       ": " + res->body);
  }
  return reply;
}

Status DemoCluster::wait_until_serving(std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (const Node& node : nodes_) {
    while (true) {
      Result<json> health = get(node.id, "/health");
      Result<json> stats = get(node.id, "/v1/stats");
      if (health.is_ok() && stats.is_ok() && stats->value("placement_version", 0) > 0) break;
      if (!node.process->running()) {
        return unavailable("node " + node.id + " exited; its log ends with:\n" +
                           log_tail(*node.process));
      }
      if (Clock::now() > deadline) {
        return deadline_exceeded("node " + node.id + " is not serving a placement after " +
                                 std::to_string(timeout.count()) + " s (health: " +
                                 (health.is_ok() ? std::string("ok") : health.status().message()) +
                                 ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return Status::ok();
}

Status DemoCluster::wait_for_version(uint64_t version, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (const Node& node : nodes_) {
    while (true) {
      // A migration that was aborted never arrives: say why instead of waiting.
      Result<json> status = query("status");
      if (status.is_ok() && (*status)["migration"].is_null() &&
          (*status)["placement"].value("version", uint64_t{0}) < version) {
        Result<json> history = query("migrations");
        std::string why;
        if (history.is_ok()) {
          for (const json& m : (*history)["migrations"]) {
            if (m.value("version", uint64_t{0}) == version) why = m.dump();
          }
        }
        return aborted_error(version, why);
      }
      Result<json> stats = get(node.id, "/v1/stats");
      if (stats.is_ok() && stats->value("placement_version", uint64_t{0}) == version) break;
      if (Clock::now() > deadline) {
        return deadline_exceeded("node " + node.id + " does not serve placement version " +
                                 std::to_string(version) + " after " +
                                 std::to_string(timeout.count()) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return Status::ok();
}

Status DemoCluster::aborted_error(uint64_t version, const std::string& why) const {
  return failed_precondition("placement version " + std::to_string(version) +
                             " was aborted; the nodes stay on the previous one" +
                             (why.empty() ? std::string() : ": " + why) +
                             "; the scheduler's log ends with:\n" + log_tail(*scheduler_));
}

Status DemoCluster::wait_reports_delivered(std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (const Node& node : nodes_) {
    while (true) {
      Result<json> stats = get(node.id, "/v1/stats");
      if (stats.is_ok() && (*stats)["scheduler"].value("reports_pending", 1) == 0) break;
      if (Clock::now() > deadline) {
        return deadline_exceeded("node " + node.id + " still has reports for the scheduler");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return Status::ok();
}

Result<json> DemoCluster::query(const std::string& what, const json& arguments) const {
  ClusterOptions options;
  options.client.scheduler = scheduler_endpoint_;
  options.client.key = (keys_dir() / "operator.key").string();
  options.client.scheduler_key = (keys_dir() / "scheduler.pub").string();
  options.timeout_s = 30;
  return query_scheduler(options, what, arguments);
}

std::vector<std::pair<std::string, std::string>> DemoCluster::chat_urls() const {
  std::vector<std::pair<std::string, std::string>> urls;
  for (const Node& n : nodes_) urls.emplace_back(n.id, "http://" + n.http + "/");
  return urls;
}

Status DemoCluster::check_running() {
  if (scheduler_ && !scheduler_->running()) {
    return unavailable("the scheduler exited; its log ends with:\n" + log_tail(*scheduler_));
  }
  for (Node& n : nodes_) {
    if (n.process && !n.process->running()) {
      return unavailable("node " + n.id + " exited; its log ends with:\n" + log_tail(*n.process));
    }
  }
  return Status::ok();
}

void DemoCluster::stop() {
  for (Node& node : nodes_) {
    if (node.process) ::kill(node.process->pid(), SIGTERM);
  }
  for (Node& node : nodes_) {
    if (node.process) node.process->stop(std::chrono::seconds(10));
  }
  nodes_.clear();
  if (scheduler_) scheduler_->stop(std::chrono::seconds(10));
  scheduler_.reset();
}

}  // namespace dancemoe::cli
