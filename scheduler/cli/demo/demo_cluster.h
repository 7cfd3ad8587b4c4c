// The demo's cluster: a `dancemoe-scheduler` and N `dancemoe-node`
// processes on 127.0.0.1 (ephemeral ports), started from the binaries next
// to `dancemoe`, each logging to a file in a work directory. Secure as a lab
// cluster is (docs/security.md): make_keys() writes a key for the
// scheduler, an operator and every node into work/keys, the scheduler
// admits the node keys, and queries use the operator key. Owns the
// processes: stop() (or the destructor) ends every one of them, so the demo
// leaves nothing running, even when it fails half-way.
//
// Not thread-safe: used by the demo's one thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/runtime/child_process.h"
#include "scheduler/cli/cli_support.h"

namespace dancemoe::cli {

struct DemoNodeSpec {
  std::string id;
  uint64_t expert_memory_bytes = 0;
};

class DemoCluster {
 public:
  DemoCluster(std::filesystem::path model_dir, std::filesystem::path work_dir);
  ~DemoCluster();
  DemoCluster(const DemoCluster&) = delete;
  DemoCluster& operator=(const DemoCluster&) = delete;

  // Generates the scheduler's, the operator's and these nodes' keys.
  Status make_keys(const std::vector<std::string>& node_ids);
  // Starts the scheduler (manual placement rounds only, short heartbeat and
  // report periods so the demo sees its statistics quickly) with its
  // dashboard on a free loopback port.
  Status start_scheduler();
  // Starts the nodes attached to the scheduler; each uses `threads` compute
  // threads.
  Status start_nodes(const std::vector<DemoNodeSpec>& nodes, int threads);
  // Waits until every node answers /health with 200 and serves a placement.
  Status wait_until_serving(std::chrono::seconds timeout);
  // Waits until every node serves placement `version`; an error at once if
  // the scheduler aborted that version.
  Status wait_for_version(uint64_t version, std::chrono::seconds timeout);

  // A query to the scheduler ("status", "round", ...).
  Result<nlohmann::json> query(const std::string& what,
                               const nlohmann::json& arguments = nlohmann::json::object()) const;
  // POST a JSON body to a node's HTTP API; the reply body.
  Result<nlohmann::json> post(const std::string& node_id, const std::string& path,
                              const nlohmann::json& body) const;
  Result<nlohmann::json> get(const std::string& node_id, const std::string& path) const;

  // Waits until no node has a report waiting for the scheduler.
  Status wait_reports_delivered(std::chrono::seconds timeout);

  // SIGTERM to every node, then the scheduler; SIGKILL after a grace period.
  void stop();
  // unavailable naming the first process that exited (with its log's end).
  Status check_running();

  const std::string& scheduler_endpoint() const { return scheduler_endpoint_; }
  // "http://127.0.0.1:PORT/": the scheduler's dashboard and a node's chat page.
  std::string dashboard_url() const { return "http://" + scheduler_http_ + "/"; }
  // The dashboard with the operator's key token in its fragment (the page
  // keeps it for the tab and may then run rounds; docs/web.md).
  std::string operator_dashboard_url() const {
    return dashboard_url() + "#token=" + operator_token_;
  }
  std::vector<std::pair<std::string, std::string>> chat_urls() const;  // (node id, URL)
  const std::filesystem::path& work_dir() const { return work_dir_; }

 private:
  struct Node {
    std::string id;
    std::unique_ptr<ChildProcess> process;
    std::filesystem::path ready_file;
    std::string http;  // HOST:PORT, from the ready file
  };
  Result<const Node*> find(const std::string& id) const;
  Status aborted_error(uint64_t version, const std::string& why) const;
  // The last lines of a process's log, for an error message.
  std::string log_tail(const ChildProcess& process) const;

  std::filesystem::path keys_dir() const { return work_dir_ / "keys"; }

  std::filesystem::path model_dir_;
  std::filesystem::path work_dir_;
  std::unique_ptr<ChildProcess> scheduler_;
  std::string scheduler_endpoint_;
  std::string scheduler_http_;  // HOST:PORT of the dashboard, from the ready file
  std::string operator_token_;  // the operator key's HTTP token (make_keys)
  std::vector<Node> nodes_;
};

}  // namespace dancemoe::cli
