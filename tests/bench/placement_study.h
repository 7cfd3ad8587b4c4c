// The runtime placement study (issue 17; docs/placement-latency.md): a real
// `dancemoe-scheduler` and real `dancemoe-node` processes of unequal memory
// on 127.0.0.1, every node's expert port behind a userspace link emulator
// (link_emulator.h: rate and one-way delay per direction, as `tc netem`),
// each node serving its own domain of a routing trace (the nodes replay the
// trace's expert choices: edge_node/trace/routing_replay.h). For each link
// and policy it measures per-token latency, fully-local steps and bytes on
// the wire, before and after a workload shift.
//
// The cluster runs secure, as a lab runs it (docs/security.md): the scheduler,
// the study (as an operator: it applies placements and runs rounds) and every
// node have CurveZMQ keys, the nodes admitted by their public keys.
//
// How one link is run:
//   1. start the scheduler (no periodic rounds: the study triggers them; the
//      gate's horizon is the default period, 300 s) and the nodes; the cold
//      start spreads one copy of every expert (uniform);
//   2. profile: every node serves `profile_requests` requests of its domain;
//   3. every policy proposes its placement from these same statistics
//      (`propose`, a dry run), so all policies see identical inputs;
//   4. before the shift, `rounds` times in turn (interleaved, the machine is
//      shared): apply each policy's placement (operator override), wait for
//      every node to serve it, measure `requests_per_node` requests per node
//      (one request in the cluster at a time, nodes in turn);
//   5. the shift, per policy: apply its placement, measure with
//      `shift_node` serving `shift_domain` ("stale": the placement of the old
//      workload), run one gated round of the policy (what the periodic round
//      does), wait for it if adopted, measure again ("after the round").
//
// Header-only: bench_placement_runtime.cpp runs the full study by hand, and
// tests/integration/placement_runtime_test.cpp a small one in CI.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/net/curve_keys.h"
#include "common/net/zmq_transport.h"
#include "common/proto/messages.h"
#include "common/runtime/child_process.h"
#include "tests/bench/free_port.h"
#include "tests/bench/link_emulator.h"

namespace dancemoe::bench {

using nlohmann::json;
namespace fs = std::filesystem;

struct StudyLink {
  std::string name;
  double bits_per_s = 0;  // 0: no relay (loopback)
  double delay_ms = 0;    // one way, per direction
};

struct StudyNode {
  std::string id;
  std::string domain;          // trace origin its users send
  double memory_fraction = 0;  // of all experts' bytes
};

struct StudyOptions {
  std::string node_binary;
  std::string scheduler_binary;
  fs::path model;
  fs::path trace;
  fs::path work;
  std::vector<std::string> origins;  // --replay-origins: prompt token i -> origins[i]
  std::vector<StudyNode> nodes;
  std::vector<std::string> policies;
  std::vector<StudyLink> links;
  int rounds = 2;
  int requests_per_node = 4;
  int tokens_per_request = 32;
  int profile_requests = 4;
  std::string shift_node;  // empty: no shift phase
  std::string shift_domain;
  int threads = 1;
  std::string wire_dtype = "f32";
};

// One measurement phase: every request of every node.
struct PhaseResult {
  std::string link;
  std::string policy;
  std::string phase;  // "before", "stale" (shifted, old placement), "after" (after the round)
  int sample = 0;
  std::vector<double> token_ms;  // decode steps, every node
  uint64_t tokens = 0;
  uint64_t steps = 0, local_steps = 0;
  uint64_t activations = 0, local_activations = 0;
  uint64_t remote_calls = 0, remote_bytes = 0;
  std::string decision;  // the gated round's outcome ("after" phases)
};

// What the nodes measured on one link (for the simulator's calibration).
struct LinkCalibration {
  std::string link;
  double remote_call_us = 0;      // mean latency of a remote expert call, every node and peer
  double local_call_us = 0;       // mean latency of a layer's local expert compute
  double expert_us_per_pair = 0;  // device compute per (token, expert)
  uint64_t remote_calls = 0;
};

struct StudyResult {
  std::vector<PhaseResult> phases;
  std::vector<LinkCalibration> calibration;
};

inline double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

inline double quantile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::ceil(q * static_cast<double>(v.size() - 1)))];
}

namespace study_detail {

using bench::free_port;

// One cluster's CurveZMQ keys in `dir`: the scheduler's, the study's
// operator key (operators/) and a key per node, admitted by its public key
// in nodes/.
struct StudyKeys {
  fs::path dir;
  net::CurveKeyPair scheduler;
  net::CurveKeyPair op;
};

inline Result<StudyKeys> make_keys(const fs::path& dir, const std::vector<StudyNode>& nodes) {
  StudyKeys k;
  k.dir = dir;
  fs::create_directories(dir / "nodes");
  fs::create_directories(dir / "operators");
  DMOE_ASSIGN_OR_RETURN(k.scheduler, net::write_key_pair(dir, "scheduler"));
  DMOE_ASSIGN_OR_RETURN(k.op, net::write_key_pair(dir, "operator"));
  DMOE_RETURN_IF_ERROR(net::write_public_key_file(dir / "operators", "operator", k.op.public_key));
  for (const StudyNode& n : nodes) {
    DMOE_ASSIGN_OR_RETURN(const net::CurveKeyPair pair, net::write_key_pair(dir, n.id));
    DMOE_RETURN_IF_ERROR(net::write_public_key_file(dir / "nodes", n.id, pair.public_key));
  }
  return k;
}

// One StatusRequest to the scheduler on a fresh DEALER socket, as the
// operator of `keys`.
inline Result<json> query(const StudyKeys& keys, const std::string& endpoint,
                          const std::string& what, const json& args = json::object(),
                          std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  zmq::context_t context(1);
  net::SocketOptions options;
  options.curve = net::CurveOptions{keys.op, keys.scheduler.public_key};
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t socket,
                        net::make_socket(context, zmq::socket_type::dealer, options));
  DMOE_RETURN_IF_ERROR(net::connect(socket, endpoint));
  proto::Envelope request;
  request.sender = "study";
  request.sequence = 1;
  request.body = proto::StatusRequest{what, args.dump()};
  DMOE_RETURN_IF_ERROR(net::send_message(socket, request));
  auto reply = net::receive_message(socket, timeout, false);
  if (!reply) return deadline_exceeded("the scheduler did not answer '" + what + "'");
  if (!reply->envelope.is_ok()) return reply->envelope.status();
  if (const auto* e = std::get_if<proto::Error>(&reply->envelope->body)) {
    return Status(e->code, e->message);
  }
  const auto* status = std::get_if<proto::StatusReply>(&reply->envelope->body);
  if (status == nullptr) return internal_error("unexpected answer to '" + what + "'");
  return json::parse(status->json);
}

// A started node: its process, where it answers HTTP, its relay.
struct NodeHandle {
  std::string id;
  std::unique_ptr<ChildProcess> process;
  std::unique_ptr<LinkEmulator> relay;
  std::string http;

  Result<json> call(const std::string& method, const std::string& path, const json& body = {},
                    int timeout_s = 600) const {
    httplib::Client client("http://" + http);
    client.set_read_timeout(timeout_s, 0);
    auto res = method == "GET" ? client.Get(path.c_str())
                               : client.Post(path.c_str(), body.dump(), "application/json");
    if (!res) return unavailable("node " + id + ": no answer on " + path);
    if (res->status != 200) {
      return unavailable("node " + id + ": " + path + " answered " + std::to_string(res->status) +
                         ": " + res->body);
    }
    return json::parse(res->body);
  }
};

// A scheduler and its nodes for one link; stopped on destruction.
class Cluster {
 public:
  Cluster(const StudyOptions& o, const StudyLink& link) : o_(o), link_(link) {}

  Status start() {
    const fs::path dir = o_.work / link_.name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path ready = dir / "scheduler_ready.json";
    DMOE_ASSIGN_OR_RETURN(keys_, make_keys(dir / "keys", o_.nodes));
    scheduler_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{o_.scheduler_binary,
                                 "--model",
                                 o_.model.string(),
                                 "--db",
                                 (dir / "scheduler.db").string(),
                                 "--control",
                                 "tcp://127.0.0.1:0",
                                 "--ready-file",
                                 ready.string(),
                                 "--interval",
                                 "1000000",
                                 "--horizon",
                                 "300",
                                 "--report-interval",
                                 "0.5",
                                 "--heartbeat-interval",
                                 "0.5",
                                 "--heartbeat-misses",
                                 "20",
                                 "--cold-start-settle",
                                 "1",
                                 "--prepare-timeout",
                                 "120",
                                 "--secret-key",
                                 (keys_.dir / "scheduler.key").string(),
                                 "--nodes-keys",
                                 (keys_.dir / "nodes").string(),
                                 "--operator-keys",
                                 (keys_.dir / "operators").string(),
                                 "--log-level",
                                 "warn"},
        dir / "scheduler.log");
    if (!wait_for_file(ready, std::chrono::seconds(60))) {
      return unavailable("the scheduler did not start; see " + (dir / "scheduler.log").string());
    }
    std::ifstream in(ready);
    endpoint_ = json::parse(in)["control"].get<std::string>();

    DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::open(o_.model));
    uint64_t all_experts = 0;
    const ModelConfig& config = checkpoint->config();
    for (int64_t l = 0; l < config.n_layers; ++l) {
      if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int64_t e = 0; e < config.n_experts; ++e) {
        all_experts += checkpoint->expert_bytes(static_cast<int32_t>(l), static_cast<int32_t>(e));
      }
    }
    std::string origins;
    for (const std::string& origin : o_.origins) origins += (origins.empty() ? "" : ",") + origin;
    for (const StudyNode& n : o_.nodes) {
      NodeHandle h;
      h.id = n.id;
      const int port = free_port();
      std::string advertise = "tcp://127.0.0.1:" + std::to_string(port);
      if (link_.bits_per_s > 0) {
        h.relay = std::make_unique<LinkEmulator>(port, link_.delay_ms, link_.bits_per_s);
        advertise = "tcp://127.0.0.1:" + std::to_string(h.relay->port());
      }
      const fs::path node_ready = dir / ("ready_" + n.id + ".json");
      const auto memory =
          static_cast<uint64_t>(n.memory_fraction * static_cast<double>(all_experts));
      h.process = std::make_unique<ChildProcess>(
          std::vector<std::string>{
              o_.node_binary, "--node-id", n.id, "--model", o_.model.string(), "--experts",
              "tcp://127.0.0.1:" + std::to_string(port), "--advertise", advertise, "--http",
              "127.0.0.1:0", "--scheduler", endpoint_, "--ready-file", node_ready.string(),
              "--threads", std::to_string(o_.threads), "--service-threads",
              std::to_string(o_.threads), "--expert-memory", std::to_string(memory),
              // Room to load a whole new set before the old one is evicted:
              // a shift may move most of a node's experts at once.
              "--migration-headroom", std::to_string(memory), "--wire-dtype", o_.wire_dtype,
              "--expert-source", "local", "--replay-routing", o_.trace.string(), "--replay-origins",
              origins, "--context", "1024", "--secret-key", (keys_.dir / (n.id + ".key")).string(),
              "--scheduler-key", (keys_.dir / "scheduler.pub").string(), "--log-level", "warn"},
          dir / ("node_" + n.id + ".log"));
      nodes_.push_back(std::move(h));
      ready_files_.push_back(node_ready);
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!wait_for_file(ready_files_[i], std::chrono::seconds(120))) {
        return unavailable("node " + nodes_[i].id + " did not start; see " +
                           (dir / ("node_" + nodes_[i].id + ".log")).string());
      }
      std::ifstream node_in(ready_files_[i]);
      nodes_[i].http = json::parse(node_in)["http"].get<std::string>();
    }
    return wait_for_version(1);
  }

  ~Cluster() {
    for (NodeHandle& n : nodes_) {
      if (n.process) n.process->stop(std::chrono::seconds(5));
    }
    if (scheduler_) scheduler_->stop(std::chrono::seconds(5));
  }

  const std::string& endpoint() const { return endpoint_; }
  const StudyKeys& keys() const { return keys_; }
  std::vector<NodeHandle>& nodes() { return nodes_; }

  // Every node serves `version` and the scheduler has it committed.
  Status wait_for_version(uint64_t version) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
    while (std::chrono::steady_clock::now() < deadline) {
      bool all = true;
      for (const NodeHandle& n : nodes_) {
        Result<json> stats = n.call("GET", "/v1/stats");
        all = all && stats.is_ok() && (*stats)["placement_version"].get<uint64_t>() == version;
      }
      Result<json> status = query(keys_, endpoint_, "status");
      all = all && status.is_ok() && !(*status)["placement"].is_null() &&
            (*status)["placement"]["version"].get<uint64_t>() == version;
      if (all) return Status::ok();
      Result<json> history = query(keys_, endpoint_, "migrations");
      if (history.is_ok()) {
        for (const json& m : (*history)["migrations"]) {
          if (m["to_version"].get<uint64_t>() == version && m["outcome"] == "aborted") {
            return aborted_error(version, m.value("reason", std::string()));
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return deadline_exceeded("placement version " + std::to_string(version) +
                             " did not reach every node");
  }

  static Status aborted_error(uint64_t version, const std::string& reason) {
    return unavailable("placement version " + std::to_string(version) + " was aborted: " + reason);
  }

  Result<uint64_t> committed_version() {
    DMOE_ASSIGN_OR_RETURN(json status, query(keys_, endpoint_, "status"));
    return status["placement"].is_null() ? 0 : status["placement"]["version"].get<uint64_t>();
  }

  // Applies a placement (operator override) and waits until it is served.
  Status apply(json placement) {
    // A proposal carries version 0; the scheduler numbers what it adopts.
    placement["version"] = 1;
    DMOE_ASSIGN_OR_RETURN(json d, query(keys_, endpoint_, "apply", {{"placement", placement}}));
    if (d["outcome"] != "adopted") return internal_error("apply was not adopted: " + d.dump());
    return wait_for_version(d["version"].get<uint64_t>());
  }

  // Lets the nodes' last report windows reach the scheduler.
  void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); }

  // The per-node requests of one phase; `domain_of` says which domain each
  // node's users send now.
  Status measure(const std::function<std::string(const StudyNode&)>& domain_of, int requests,
                 PhaseResult* out) {
    for (int r = 0; r < requests; ++r) {
      for (size_t i = 0; i < nodes_.size(); ++i) {
        const std::string domain = domain_of(o_.nodes[i]);
        const auto it = std::find(o_.origins.begin(), o_.origins.end(), domain);
        if (it == o_.origins.end()) return invalid_argument("unknown domain " + domain);
        const int32_t first = static_cast<int32_t>(it - o_.origins.begin());
        const json body = {{"prompt_tokens", {first, 7 + r, 11}},
                           {"max_tokens", o_.tokens_per_request},
                           {"temperature", 0},
                           {"ignore_eos", true}};
        DMOE_ASSIGN_OR_RETURN(json reply, nodes_[i].call("POST", "/v1/generate", body));
        for (const json& ms : reply["step_ms"]) out->token_ms.push_back(ms.get<double>());
        out->tokens += reply["step_ms"].size();
        out->steps += reply["steps"]["total"].get<uint64_t>();
        out->local_steps += reply["steps"]["local"].get<uint64_t>();
        out->activations += reply["activations"]["total"].get<uint64_t>();
        out->local_activations += reply["activations"]["local"].get<uint64_t>();
        out->remote_calls += reply["remote_calls"].get<uint64_t>();
        out->remote_bytes += reply["remote_bytes"].get<uint64_t>();
      }
    }
    return Status::ok();
  }

  // Means over every node's statistics since it started.
  Result<LinkCalibration> calibration() {
    LinkCalibration c;
    c.link = link_.name;
    double remote_sum = 0, local_sum = 0, busy = 0, pairs = 0;
    uint64_t local_calls = 0;
    for (const NodeHandle& n : nodes_) {
      DMOE_ASSIGN_OR_RETURN(json s, n.call("GET", "/v1/stats"));
      for (const json& p : s["peers"]) {
        const uint64_t calls = p["calls"].get<uint64_t>() - p["failures"].get<uint64_t>();
        c.remote_calls += calls;
        remote_sum += static_cast<double>(calls) * p["mean_latency_us"].get<double>();
      }
      const uint64_t lc = s["local_calls"]["calls"].get<uint64_t>();
      local_calls += lc;
      local_sum += static_cast<double>(lc) * s["local_calls"]["mean_latency_us"].get<double>();
      for (const json& d : s["devices"]) {
        if (!d.contains("compute")) continue;
        busy += d["compute"]["busy_us"].get<double>();
        pairs += d["compute"]["pairs"].get<double>();
      }
    }
    c.remote_call_us = c.remote_calls ? remote_sum / static_cast<double>(c.remote_calls) : 0;
    c.local_call_us = local_calls ? local_sum / static_cast<double>(local_calls) : 0;
    c.expert_us_per_pair = pairs > 0 ? busy / pairs : 0;
    return c;
  }

 private:
  const StudyOptions& o_;
  StudyLink link_;
  StudyKeys keys_;
  std::unique_ptr<ChildProcess> scheduler_;
  std::string endpoint_;
  std::vector<NodeHandle> nodes_;
  std::vector<fs::path> ready_files_;
};

}  // namespace study_detail

// The all-local reference for the simulator's calibration: one standalone
// node holding every expert serves `requests` requests of the first node's
// domain. Per-token latency (ms) and the node's mean local call (us).
struct Baseline {
  std::vector<double> token_ms;
  double local_call_us = 0;
  double expert_us_per_pair = 0;
};

inline Result<Baseline> run_baseline(const StudyOptions& o, int requests) {
  const fs::path dir = o.work / "baseline";
  fs::remove_all(dir);
  fs::create_directories(dir);
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::open(o.model));
  const ModelConfig& config = checkpoint->config();
  const int port = study_detail::free_port();
  json pairs = json::array();
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config.n_experts; ++e) pairs.push_back({l, e});
  }
  const json placement = {{"version", 1},
                          {"nodes",
                           {{"all",
                             {{"expert_endpoint", "tcp://127.0.0.1:" + std::to_string(port)},
                              {"devices", {{"cpu", pairs}}}}}}}};
  std::ofstream(dir / "placement.json") << placement.dump();
  std::string origins;
  for (const std::string& origin : o.origins) origins += (origins.empty() ? "" : ",") + origin;
  // Standalone and secure: its own key, and itself as the only peer.
  fs::create_directories(dir / "peers");
  DMOE_ASSIGN_OR_RETURN(const net::CurveKeyPair key, net::write_key_pair(dir, "all"));
  DMOE_RETURN_IF_ERROR(net::write_public_key_file(dir / "peers", "all", key.public_key));
  const fs::path ready = dir / "ready.json";
  study_detail::NodeHandle node;
  node.id = "all";
  node.process = std::make_unique<ChildProcess>(
      std::vector<std::string>{o.node_binary,
                               "--node-id",
                               "all",
                               "--model",
                               o.model.string(),
                               "--experts",
                               "tcp://127.0.0.1:" + std::to_string(port),
                               "--http",
                               "127.0.0.1:0",
                               "--placement",
                               (dir / "placement.json").string(),
                               "--ready-file",
                               ready.string(),
                               "--threads",
                               std::to_string(o.threads),
                               "--replay-routing",
                               o.trace.string(),
                               "--replay-origins",
                               origins,
                               "--context",
                               "1024",
                               "--secret-key",
                               (dir / "all.key").string(),
                               "--peer-keys",
                               (dir / "peers").string(),
                               "--log-level",
                               "warn"},
      dir / "node.log");
  if (!wait_for_file(ready, std::chrono::seconds(120))) {
    return unavailable("the baseline node did not start; see " + (dir / "node.log").string());
  }
  std::ifstream in(ready);
  node.http = json::parse(in)["http"].get<std::string>();
  Baseline b;
  const auto domain = std::find(o.origins.begin(), o.origins.end(), o.nodes.front().domain);
  for (int r = 0; r < requests; ++r) {
    const json body = {{"prompt_tokens", {static_cast<int>(domain - o.origins.begin()), 7 + r, 11}},
                       {"max_tokens", o.tokens_per_request},
                       {"temperature", 0},
                       {"ignore_eos", true}};
    DMOE_ASSIGN_OR_RETURN(json reply, node.call("POST", "/v1/generate", body));
    for (const json& ms : reply["step_ms"]) b.token_ms.push_back(ms.get<double>());
  }
  DMOE_ASSIGN_OR_RETURN(json stats, node.call("GET", "/v1/stats"));
  b.local_call_us = stats["local_calls"]["mean_latency_us"].get<double>();
  for (const json& d : stats["devices"]) {
    if (d.contains("compute")) b.expert_us_per_pair = d["compute"]["us_per_pair"].get<double>();
  }
  node.process->stop(std::chrono::seconds(5));
  return b;
}

// Runs every link of the study; `progress` receives a line per phase.
inline Result<StudyResult> run_study(const StudyOptions& o,
                                     const std::function<void(const std::string&)>& progress) {
  StudyResult result;
  auto own_domain = [](const StudyNode& n) { return n.domain; };
  auto shifted = [&o](const StudyNode& n) {
    return n.id == o.shift_node ? o.shift_domain : n.domain;
  };
  for (const StudyLink& link : o.links) {
    study_detail::Cluster cluster(o, link);
    DMOE_RETURN_IF_ERROR(cluster.start().with_context("link " + link.name));
    PhaseResult profile;
    DMOE_RETURN_IF_ERROR(cluster.measure(own_domain, o.profile_requests, &profile));
    cluster.settle();
    std::map<std::string, json> placements;
    for (const std::string& policy : o.policies) {
      DMOE_ASSIGN_OR_RETURN(json proposal, study_detail::query(cluster.keys(), cluster.endpoint(),
                                                               "propose", {{"policy", policy}}));
      placements[policy] = proposal["placement"];
      progress(link.name + ": " + policy + " proposed (" + proposal["method"].get<std::string>() +
               ")");
    }
    for (int round = 0; round < o.rounds; ++round) {
      for (const std::string& policy : o.policies) {
        DMOE_RETURN_IF_ERROR(cluster.apply(placements[policy]));
        PhaseResult phase;
        phase.link = link.name;
        phase.policy = policy;
        phase.phase = "before";
        phase.sample = round;
        DMOE_RETURN_IF_ERROR(cluster.measure(own_domain, o.requests_per_node, &phase));
        progress(link.name + ": " + policy + " before #" + std::to_string(round) + ": " +
                 std::to_string(mean_of(phase.token_ms)) + " ms/token");
        result.phases.push_back(std::move(phase));
      }
    }
    if (!o.shift_node.empty()) {
      for (const std::string& policy : o.policies) {
        DMOE_RETURN_IF_ERROR(cluster.apply(placements[policy]));
        PhaseResult stale;
        stale.link = link.name;
        stale.policy = policy;
        stale.phase = "stale";
        DMOE_RETURN_IF_ERROR(cluster.measure(shifted, o.requests_per_node, &stale));
        cluster.settle();
        DMOE_ASSIGN_OR_RETURN(const uint64_t before, cluster.committed_version());
        DMOE_ASSIGN_OR_RETURN(json d, study_detail::query(cluster.keys(), cluster.endpoint(),
                                                          "round", {{"policy", policy}}));
        PhaseResult after;
        after.link = link.name;
        after.policy = policy;
        after.phase = "after";
        after.decision = d["outcome"].get<std::string>();
        if (after.decision == "adopted") {
          DMOE_RETURN_IF_ERROR(cluster.wait_for_version(d["version"].get<uint64_t>()));
        } else {
          DMOE_ASSIGN_OR_RETURN(const uint64_t now, cluster.committed_version());
          if (now != before) return internal_error("the placement changed without adoption");
        }
        DMOE_RETURN_IF_ERROR(cluster.measure(shifted, o.requests_per_node, &after));
        progress(link.name + ": " + policy + " shift: stale " +
                 std::to_string(mean_of(stale.token_ms)) + " ms/token, round " + after.decision +
                 ", after " + std::to_string(mean_of(after.token_ms)) + " ms/token");
        result.phases.push_back(std::move(stale));
        result.phases.push_back(std::move(after));
      }
    }
    DMOE_ASSIGN_OR_RETURN(LinkCalibration c, cluster.calibration());
    result.calibration.push_back(c);
  }
  return result;
}

}  // namespace dancemoe::bench
