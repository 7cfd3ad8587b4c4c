// Collaboration cost (issue 5): decode tokens/s of one request on a cluster
// of three `dancemoe-node` processes, each holding one third of the experts
// (coverage exact, no replicas; the request enters node a), against one node
// holding every expert -- on loopback and on emulated LAN links (1 Gbit/s
// and 500 Mbit/s, 0.5 ms one-way delay), with and without overlapping local
// expert compute with the network (--no-overlap), printing the ratios.
//
//   build/release/tests/bench_collab [--model DIR] [--gen-tokens 32] [--prompt-tokens 16]
//                                    [--threads 2] [--repeats 3] [--links loopback,1gbit,500mbit]
//                                    [--netns]
//
// Links: by default the emulated links are userspace relays
// (link_emulator.h: every byte between nodes goes through a relay that
// enforces the rate and the delay per direction), because this machine's
// kernel has no sch_netem. With --netns the nodes run in network namespaces
// shaped by tc netem (deploy/netem/netem.sh, root and sch_netem needed; the
// benchmark says so and skips those rows when they are missing).
// Without --model, the medium preset is generated (once) under the build tree.
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/model/synthetic/synthetic_model.h"
#include "common/net/curve_keys.h"
#include "tests/bench/bench_models.h"
#include "tests/bench/free_port.h"
#include "tests/bench/link_emulator.h"

extern char** environ;

using namespace dancemoe;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Options {
  fs::path model = fs::path(DMOE_BUILD_DIR) / "bench-models/medium";
  int gen_tokens = 32;
  int prompt_tokens = 16;
  int threads = 2;
  int repeats = 3;
  std::vector<std::string> links = {"loopback", "1gbit", "500mbit"};
  bool netns = false;
  fs::path work = fs::path(DMOE_BUILD_DIR) / "bench-collab";
};

struct Link {
  std::string name;
  double bits_per_s = 0;  // 0: loopback, no shaping
  double delay_ms = 0;
};

Link link_named(const std::string& name) {
  if (name == "1gbit") return {name, 1e9, 0.5};
  if (name == "500mbit") return {name, 500e6, 0.5};
  return {"loopback", 0, 0};
}

using bench::free_port;

// One `dancemoe-node` process (optionally inside a network namespace).
class Node {
 public:
  Node(const std::string& id, std::vector<std::string> args, const fs::path& work,
       const std::string& netns = "") {
    ready_ = work / ("ready_" + id + ".json");
    fs::remove(ready_);
    std::vector<std::string> argv;
    if (!netns.empty()) argv = {"/usr/sbin/ip", "netns", "exec", netns};
    // Several nodes on this host: each gets a budget (the node refuses to guess one).
    argv.insert(argv.end(), {DMOE_NODE_PATH, "--node-id", id, "--ready-file", ready_.string(),
                             "--log-level", "warn", "--expert-memory", "4G"});
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> c;
    for (std::string& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (work / ("log_" + id + ".txt")).string();
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, c[0], &actions, nullptr, c.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Node() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  bool wait_ready(int timeout_s = 300) {
    for (int i = 0; i < timeout_s * 20; ++i) {
      if (fs::exists(ready_) && fs::file_size(ready_) > 0) {
        std::ifstream in(ready_);
        http_ = json::parse(in)["http"].get<std::string>();
        return true;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  std::optional<json> generate(const json& body) const {
    httplib::Client client("http://" + http_);
    client.set_read_timeout(600, 0);
    auto res = client.Post("/v1/generate", body.dump(), "application/json");
    if (!res || res->status != 200) {
      std::fprintf(stderr, "request failed: %s\n", res ? res->body.c_str() : "no connection");
      return std::nullopt;
    }
    return json::parse(res->body);
  }

 private:
  pid_t pid_ = -1;
  fs::path ready_;
  std::string http_;
};

json placement(const std::map<std::string, std::vector<int32_t>>& experts,
               const std::map<std::string, std::string>& endpoints, const json& config) {
  const int64_t n_layers = config["num_hidden_layers"].get<int64_t>();
  json nodes = json::object();
  for (const auto& [id, list] : experts) {
    json pairs = json::array();
    for (int64_t l = 0; l < n_layers; ++l) {
      for (int32_t e : list) pairs.push_back({l, e});
    }
    nodes[id] = {{"expert_endpoint", endpoints.at(id)}, {"devices", {{"cpu", pairs}}}};
  }
  return {{"version", 1}, {"nodes", nodes}};
}

// Median decode tokens/s of `repeats` requests (after one warm-up).
std::optional<double> measure(const Node& node, const Options& o, json* last) {
  std::vector<int32_t> prompt;
  for (int i = 0; i < o.prompt_tokens; ++i) prompt.push_back(100 + 37 * i);
  const json body = {{"prompt_tokens", prompt},
                     {"max_tokens", o.gen_tokens},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  if (!node.generate(body)) return std::nullopt;
  std::vector<double> rates;
  for (int r = 0; r < o.repeats; ++r) {
    std::optional<json> out = node.generate(body);
    if (!out) return std::nullopt;
    rates.push_back((*out)["decode_tokens_per_s"].get<double>());
    *last = *out;
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

bool netem(const std::string& args) {
  const fs::path script = fs::path(DMOE_SOURCE_DIR) / "deploy/netem/netem.sh";
  return std::system(("'" + script.string() + "' " + args + " > /dev/null").c_str()) == 0;
}

bool netns_available(std::string* why) {
  const fs::path script = fs::path(DMOE_SOURCE_DIR) / "deploy/netem/netem.sh";
  const std::string cmd = "'" + script.string() + "' check 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char line[512];
  std::string out;
  while (std::fgets(line, sizeof line, p)) out += line;
  const int status = ::pclose(p);
  *why = out;
  return status == 0;
}

}  // namespace

namespace {

// CurveZMQ as a lab runs it (docs/security.md): a key per node in
// work/keys, every node's public key in work/keys/peers (--peer-keys).
std::vector<std::string> key_args(const fs::path& work, const std::string& id) {
  const fs::path dir = work / "keys";
  if (!fs::exists(dir)) {
    fs::create_directories(dir / "peers");
    for (const char* node : {"a", "b", "c", "all"}) {
      const Result<net::CurveKeyPair> pair = net::write_key_pair(dir, node);
      if (!pair.is_ok() ||
          !net::write_public_key_file(dir / "peers", node, pair->public_key).is_ok()) {
        std::fprintf(stderr, "cannot write keys into %s\n", dir.c_str());
        std::exit(1);
      }
    }
  }
  return {"--secret-key", (dir / (id + ".key")).string(), "--peer-keys", (dir / "peers").string()};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model")
      o.model = value();
    else if (a == "--gen-tokens")
      o.gen_tokens = std::stoi(value());
    else if (a == "--prompt-tokens")
      o.prompt_tokens = std::stoi(value());
    else if (a == "--threads")
      o.threads = std::stoi(value());
    else if (a == "--repeats")
      o.repeats = std::stoi(value());
    else if (a == "--netns")
      o.netns = true;
    else if (a == "--links") {
      o.links.clear();
      std::stringstream s(value());
      for (std::string item; std::getline(s, item, ',');) o.links.push_back(item);
    } else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of bench_collab.cpp)\n",
                   a.c_str());
      return 2;
    }
  }
  if (!bench::ensure_preset("medium", o.model)) return 1;
  fs::create_directories(o.work);
  std::ifstream in(o.model / "config.json");
  const json config = json::parse(in);
  const int32_t n_experts = config["num_experts"].get<int32_t>();
  std::map<std::string, std::vector<int32_t>> thirds;
  for (int32_t e = 0; e < n_experts; ++e)
    thirds[std::string(1, static_cast<char>('a' + e % 3))].push_back(e);
  std::map<std::string, std::vector<int32_t>> whole = {{"all", {}}};
  for (int32_t e = 0; e < n_experts; ++e) whole["all"].push_back(e);
  const std::vector<std::string> common = {
      "--model",           o.model.string(),          "--threads", std::to_string(o.threads),
      "--service-threads", std::to_string(o.threads), "--context", "1024"};
  std::printf(
      "model %s, one request: %d prompt tokens, %d decoded, %d thread(s) per node, median of %d\n",
      o.model.c_str(), o.prompt_tokens, o.gen_tokens, o.threads, o.repeats);
  std::printf("%-36s %-22s %12s %10s %14s\n", "configuration", "link", "decode tok/s", "vs 1 node",
              "calls/fwd");

  double single = 0;
  {
    const int port = free_port();
    std::ofstream(o.work / "single.json")
        << placement(whole, {{"all", "tcp://127.0.0.1:" + std::to_string(port)}}, config).dump();
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--experts", "tcp://127.0.0.1:" + std::to_string(port), "--http",
                             "127.0.0.1:0", "--placement", (o.work / "single.json").string()});
    for (const std::string& k : key_args(o.work, "all")) args.push_back(k);
    Node node("all", args, o.work);
    if (!node.wait_ready()) {
      std::fprintf(stderr, "the single node did not start; see %s\n",
                   (o.work / "log_all.txt").c_str());
      return 1;
    }
    json last;
    std::optional<double> rate = measure(node, o, &last);
    if (!rate) return 1;
    single = *rate;
    std::printf("%-36s %-22s %12.2f %10s %14s\n", "1 node, every expert", "-", single, "1.00", "0");
  }

  std::string netns_why;
  const bool use_netns = o.netns && netns_available(&netns_why);
  if (o.netns && !use_netns) {
    std::printf("(--netns skipped: %s; using the userspace link emulator)\n", netns_why.c_str());
  }
  for (const std::string& link_name : o.links) {
    const Link link = link_named(link_name);
    for (bool overlap : {true, false}) {
      const bool shaped_netns = use_netns && link.bits_per_s > 0;
      if (shaped_netns &&
          !netem("up --nodes 3 --rate " + std::to_string(static_cast<int64_t>(link.bits_per_s)) +
                 "bit --delay " + std::to_string(link.delay_ms) + "ms")) {
        std::fprintf(stderr, "deploy/netem/netem.sh up failed\n");
        return 1;
      }
      std::map<std::string, int> ports;
      std::map<std::string, std::string> endpoints, hosts, namespaces;
      std::vector<std::unique_ptr<bench::LinkEmulator>> relays;
      int index = 0;
      for (const auto& [id, list] : thirds) {
        ports[id] = free_port();
        hosts[id] = shaped_netns ? "10.77.0." + std::to_string(index + 1) : "127.0.0.1";
        if (shaped_netns) namespaces[id] = "dmoe-n" + std::to_string(index);
        ++index;
        if (link.bits_per_s > 0 && !use_netns) {
          relays.push_back(
              std::make_unique<bench::LinkEmulator>(ports[id], link.delay_ms, link.bits_per_s));
          endpoints[id] = "tcp://127.0.0.1:" + std::to_string(relays.back()->port());
        } else {
          endpoints[id] = "tcp://" + hosts[id] + ":" + std::to_string(ports[id]);
        }
      }
      std::ofstream(o.work / "cluster.json") << placement(thirds, endpoints, config).dump();
      std::vector<std::unique_ptr<Node>> nodes;
      for (const auto& [id, list] : thirds) {
        std::vector<std::string> args = common;
        args.insert(args.end(),
                    {"--experts", "tcp://" + hosts[id] + ":" + std::to_string(ports[id]), "--http",
                     hosts[id] + ":0", "--placement", (o.work / "cluster.json").string()});
        if (!overlap) args.push_back("--no-overlap");
        for (const std::string& k : key_args(o.work, id)) args.push_back(k);
        nodes.push_back(std::make_unique<Node>(id, args, o.work, namespaces[id]));
      }
      for (auto& n : nodes) {
        if (!n->wait_ready()) {
          std::fprintf(stderr, "a cluster node did not start; see %s/log_*.txt\n", o.work.c_str());
          return 1;
        }
      }
      json last;
      std::optional<double> rate = measure(*nodes[0], o, &last);
      if (!rate) return 1;
      // Remote calls per forward pass (the prefill, then one per decoded token but the last).
      const double remote_per_token =
          static_cast<double>(last["remote_calls"].get<int64_t>()) /
          std::max<double>(1, static_cast<double>(last["tokens"].size()));
      std::string link_label = link.bits_per_s > 0
                                   ? link_name + ", 0.5 ms" + (use_netns ? " (netem)" : " (relay)")
                                   : "loopback";
      std::printf("%-36s %-22s %12.2f %10.2f %14.1f\n",
                  overlap ? "3 nodes, 1/3 each, overlap" : "3 nodes, 1/3 each, no overlap",
                  link_label.c_str(), *rate, *rate / single, remote_per_token);
      std::fflush(stdout);
      nodes.clear();
      if (shaped_netns) netem("down");
    }
  }
  return 0;
}
