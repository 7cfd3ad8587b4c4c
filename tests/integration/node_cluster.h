// Helpers for the node agent's integration tests (header-only: the suite
// compiles only *_test.cpp): start `dancemoe-node` processes on 127.0.0.1
// with free ports, wait for their ready files, talk to their HTTP API, and
// write placement files.
#pragma once

#include <doctest/doctest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/model/model_config.h"
#include "common/model/synthetic/synthetic_model.h"
#include "tests/support/child_process.h"
#include "tests/support/cluster_keys.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"
#include "tests/support/protocol_peer.h"  // free_tcp_port

namespace dancemoe::testing {

using nlohmann::json;

// A greedy /generate request body for `prompt` that generates all
// `max_tokens` (ignore_eos), with every step's logits when asked.
inline json greedy_request(const std::vector<int32_t>& prompt, int max_tokens,
                           bool logits = false) {
  json body = {{"prompt_tokens", prompt},
               {"max_tokens", max_tokens},
               {"temperature", 0},
               {"ignore_eos", true}};
  if (logits) body["return_logits"] = true;
  return body;
}

// `n` token ids in [3, 503) drawn from `seed`: a prompt any tiny preset's
// vocabulary holds.
inline std::vector<int32_t> random_prompt(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> prompt(static_cast<size_t>(n));
  for (int32_t& t : prompt) t = 3 + static_cast<int32_t>(rng() % 500);
  return prompt;
}

// A 48-token prompt of "domain" `domain`: ids from a 12-id vocabulary of
// its own (100 + 700 domain + 37 k), so its tokens route differently from
// other domains' (the random-weight models route by token identity more
// than by meaning).
inline std::vector<int32_t> domain_prompt(int domain, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p(48);
  for (int32_t& t : p) t = 100 + 700 * domain + static_cast<int32_t>(rng() % 12) * 37;
  return p;
}

// The MoE layers of a model directory, as its config.json defines them.
inline std::vector<int32_t> moe_layers_of(const std::filesystem::path& model_dir) {
  auto config = load_model_config(model_dir);
  REQUIRE(config.is_ok());
  std::vector<int32_t> out;
  for (int64_t l = 0; l < config->n_layers; ++l) {
    if (config->layer_is_moe[static_cast<size_t>(l)]) out.push_back(static_cast<int32_t>(l));
  }
  return out;
}

// node id -> experts it holds (the same set in every MoE layer, shifted by
// `layer_shift * layer` so layers differ).
struct PlacementSpec {
  uint64_t version = 1;
  std::map<std::string, std::vector<int32_t>> experts;
  int32_t layer_shift = 0;
};

inline json placement_json(const PlacementSpec& spec, const std::vector<int32_t>& layers,
                           int32_t n_experts, const std::map<std::string, std::string>& endpoints) {
  json nodes = json::object();
  for (const auto& [id, experts] : spec.experts) {
    json list = json::array();
    for (int32_t l : layers) {
      for (int32_t e : experts) list.push_back({l, (e + spec.layer_shift * l) % n_experts});
    }
    nodes[id] = {{"expert_endpoint", endpoints.at(id)}, {"devices", {{"cpu", list}}}};
  }
  return {{"version", spec.version}, {"nodes", nodes}};
}

inline void write_json(const std::filesystem::path& path, const json& j) {
  std::ofstream(path) << j.dump(1);
}

inline bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

// A `dancemoe-node`. Secure as in a lab: a standalone node (--placement)
// without key flags gets its key and its cluster's node keys
// (standalone_key_args, in work/standalone-keys); an attached one must be given the
// scheduler's keys (SchedulerProcess::node_args) or --insecure.
class NodeProcess {
 public:
  NodeProcess(const std::filesystem::path& work, const std::string& node_id,
              std::vector<std::string> args)
      : id_(node_id), ready_(work / ("ready_" + node_id + ".json")) {
    std::filesystem::remove(ready_);
    std::vector<std::string> argv = {DMOE_NODE_PATH,  "--node-id",   node_id, "--ready-file",
                                     ready_.string(), "--log-level", "warn"};
    const auto placement = std::find(args.begin(), args.end(), "--placement");
    if (placement != args.end() && placement + 1 != args.end() && !has_flag(args, "--insecure") &&
        !has_flag(args, "--secret-key")) {
      const std::vector<std::string> keys =
          standalone_key_args(work / "standalone-keys", node_id, *(placement + 1));
      argv.insert(argv.end(), keys.begin(), keys.end());
    }
    // Tests run in parallel: without a budget, a node seeing another on this
    // host refuses to guess one (NodeAgent::check_shared_host).
    const bool sized = std::any_of(args.begin(), args.end(), [](const std::string& a) {
      return a == "--expert-memory" || a == "--device-memory";
    });
    if (!sized) argv.insert(argv.end(), {"--expert-memory", "256M"});
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = std::make_unique<ChildProcess>(argv, work / ("log_" + node_id + ".txt"));
  }
  // Waits for the ready file; false (with the log shown) if the process died or timed out.
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    if (!wait_for_file(ready_, timeout)) {
      MESSAGE("node " << id_ << " not ready; log:\n" << process_->log());
      return false;
    }
    std::ifstream in(ready_);
    const json r = json::parse(in);
    http_ = r["http"].get<std::string>();
    experts_ = r["expert_endpoint"].get<std::string>();
    return true;
  }
  const std::string& id() const { return id_; }
  const std::string& expert_endpoint() const { return experts_; }
  ChildProcess& process() { return *process_; }

  // (HTTP status, body as JSON); status -1 when the connection failed.
  std::pair<int, json> post(const std::string& path, const json& body, int timeout_s = 120) const {
    httplib::Client client(base());
    client.set_read_timeout(timeout_s, 0);
    auto res = client.Post(path.c_str(), body.dump(), "application/json");
    if (!res) return {-1, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  std::pair<int, json> get(const std::string& path) const {
    httplib::Client client(base());
    client.set_read_timeout(30, 0);
    auto res = client.Get(path.c_str());
    if (!res) return {-1, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  json generate(const json& body) const {
    auto [status, out] = post("/v1/generate", body);
    INFO("node " << id_ << ": " << out.dump());
    REQUIRE(status == 200);
    return out;
  }
  json stats() const {
    auto [status, out] = get("/v1/stats");
    REQUIRE(status == 200);
    return out;
  }

 private:
  std::string base() const { return "http://" + http_; }

  std::string id_;
  std::filesystem::path ready_;
  std::string http_;
  std::string experts_;
  std::unique_ptr<ChildProcess> process_;
};

// Common flags of a test node: its model, its expert port, an ephemeral HTTP port.
inline std::vector<std::string> node_args(const std::filesystem::path& model, int expert_port,
                                          std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "--model", model.string(), "--experts", "tcp://127.0.0.1:" + std::to_string(expert_port),
      "--http",  "127.0.0.1:0",  "--threads", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

inline std::string endpoint_of(int port) { return "tcp://127.0.0.1:" + std::to_string(port); }

}  // namespace dancemoe::testing
