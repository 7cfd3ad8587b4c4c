#include "tests/support/cluster_keys.h"

#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace dancemoe::testing {

ClusterKeys::ClusterKeys(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(nodes_dir());
  std::filesystem::create_directories(operators_dir());
  Result<net::CurveKeyPair> scheduler = net::write_key_pair(dir_, "scheduler");
  Result<net::CurveKeyPair> op = net::write_key_pair(dir_, "operator");
  REQUIRE(scheduler.is_ok());
  REQUIRE(op.is_ok());
  scheduler_ = *scheduler;
  operator_ = *op;
  REQUIRE(net::write_public_key_file(operators_dir(), "operator", operator_.public_key).is_ok());
}

const net::CurveKeyPair& ClusterKeys::pair(const std::string& name) {
  auto it = pairs_.find(name);
  if (it == pairs_.end()) {
    Result<net::CurveKeyPair> made = net::write_key_pair(dir_, name);
    INFO(made.status().to_string());
    REQUIRE(made.is_ok());
    it = pairs_.emplace(name, *made).first;
  }
  return it->second;
}

std::filesystem::path ClusterKeys::secret(const std::string& name) {
  (void)pair(name);
  return dir_ / (name + ".key");
}

void ClusterKeys::admit_file(const std::string& name) {
  REQUIRE(net::write_public_key_file(nodes_dir(), name, pair(name).public_key).is_ok());
}

std::vector<std::string> ClusterKeys::scheduler_args() const {
  return {"--secret-key",       scheduler_secret().string(), "--nodes-keys",
          nodes_dir().string(), "--operator-keys",           operators_dir().string()};
}

std::vector<std::string> ClusterKeys::node_args(const std::string& name) {
  return {"--secret-key", secret(name).string(), "--scheduler-key", scheduler_public().string()};
}

std::vector<std::string> ClusterKeys::operator_cli_args() const {
  return {"--key", operator_secret().string(), "--scheduler-key", scheduler_public().string()};
}

net::CurveOptions ClusterKeys::to_scheduler(const net::CurveKeyPair& who) const {
  return net::CurveOptions{who, scheduler_.public_key};
}

std::vector<std::string> standalone_key_args(const std::filesystem::path& dir,
                                             const std::string& node_id,
                                             const std::filesystem::path& placement_file) {
  std::vector<std::string> ids = {node_id};
  std::ifstream in(placement_file);
  const nlohmann::json placement = nlohmann::json::parse(in, nullptr, false);
  if (placement.is_object() && placement.contains("nodes") && placement["nodes"].is_object()) {
    for (const auto& [id, node] : placement["nodes"].items()) ids.push_back(id);
  }
  const std::filesystem::path peers = dir / "peers";
  std::filesystem::create_directories(peers);
  for (const std::string& id : ids) {
    if (!std::filesystem::exists(dir / (id + ".key"))) {
      REQUIRE(net::write_key_pair(dir, id).is_ok());
    }
    if (!std::filesystem::exists(peers / (id + ".pub"))) {
      Result<std::string> key = net::read_public_key_file(dir / (id + ".pub"));
      REQUIRE(key.is_ok());
      REQUIRE(net::write_public_key_file(peers, id, *key).is_ok());
    }
  }
  return {"--secret-key", (dir / (node_id + ".key")).string(), "--peer-keys", peers.string()};
}

}  // namespace dancemoe::testing
