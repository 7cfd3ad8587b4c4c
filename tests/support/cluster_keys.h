// A CURVE key set per test cluster (docs/security.md), so that integration
// tests run the executables secure, as a lab does: the scheduler's key, an
// operator's key (directory operators/), and node keys made on demand,
// admitted by writing NAME.pub into nodes/. Everything lives in one
// directory the test owns.
//
// Not thread-safe; one per test cluster.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/net/curve_keys.h"
#include "common/net/zmq_transport.h"

namespace dancemoe::testing {

class ClusterKeys {
 public:
  // Writes the scheduler's and the operator's keys into `dir`.
  explicit ClusterKeys(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path nodes_dir() const { return dir_ / "nodes"; }
  std::filesystem::path operators_dir() const { return dir_ / "operators"; }
  std::filesystem::path scheduler_secret() const { return dir_ / "scheduler.key"; }
  std::filesystem::path scheduler_public() const { return dir_ / "scheduler.pub"; }
  std::filesystem::path operator_secret() const { return dir_ / "operator.key"; }
  const net::CurveKeyPair& scheduler_pair() const { return scheduler_; }
  const net::CurveKeyPair& operator_pair() const { return operator_; }

  // NAME's key pair, generated on first use (NAME.key / NAME.pub in dir()).
  const net::CurveKeyPair& pair(const std::string& name);
  std::filesystem::path secret(const std::string& name);
  // Writes NAME.pub into nodes_dir() (a scheduler started later admits it).
  void admit_file(const std::string& name);

  // --secret-key, --nodes-keys and --operator-keys of dancemoe-scheduler.
  std::vector<std::string> scheduler_args() const;
  // --secret-key and --scheduler-key of an attached dancemoe-node NAME.
  std::vector<std::string> node_args(const std::string& name);
  // --key and --scheduler-key of the CLI as the operator.
  std::vector<std::string> operator_cli_args() const;
  // A client socket to the scheduler with NAME's key (or the operator's).
  net::CurveOptions to_scheduler(const net::CurveKeyPair& who) const;

 private:
  std::filesystem::path dir_;
  net::CurveKeyPair scheduler_;
  net::CurveKeyPair operator_;
  std::map<std::string, net::CurveKeyPair> pairs_;
};

// Standalone nodes (--placement FILE, no scheduler): the flags that give
// node `node_id` its key and the cluster's node keys (--secret-key,
// --peer-keys), kept in `dir`: a key for every node the placement file
// names and for `node_id`, made on first use. Every node of one standalone
// cluster shares `dir`.
std::vector<std::string> standalone_key_args(const std::filesystem::path& dir,
                                             const std::string& node_id,
                                             const std::filesystem::path& placement_file);

}  // namespace dancemoe::testing
