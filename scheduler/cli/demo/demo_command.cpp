// `dancemoe demo`: the README's main job on the embedded default. Generates
// the demo model (random weights, synthetic tokenizer) if it is missing,
// starts a scheduler and three nodes of unequal memory on 127.0.0.1, waits
// until they serve, sends prompts of three kinds (code, arithmetic, history)
// to the three nodes, forces one placement round, and prints the placement
// status before and after with each node's local-hit ratio -- then stops
// everything it started, or with --keep keeps it all running (the
// scheduler's dashboard and every node's chat page stay up) until Ctrl-C.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/model/checkpoint.h"
#include "common/model/synthetic/synthetic_model.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/cluster/cluster_format.h"
#include "scheduler/cli/cluster/status_format.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/demo/demo_cluster.h"
#include "scheduler/cli/progress_bar.h"

namespace dancemoe::cli {
namespace {

using nlohmann::json;

struct Options {
  std::string model;
  std::string demo_dir = "demo-model";
  std::string work_dir;
  int max_tokens = 24;
  int prompts_per_node = 4;
  bool keep = false;
};

// Each node's users ask about one kind of thing.
struct Workload {
  std::string node;
  std::string kind;
  std::vector<std::string> prompts;
};

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> w = {
      {"a",
       "code",
       {"Write a Python function that reverses a linked list.",
        "Implement binary search in C++ with iterators.",
        "Write a SQL query that returns the ten newest orders per customer.",
        "Explain what this regex does: ^[a-z0-9_]+@[a-z]+\\.[a-z]{2,}$",
        "Refactor this JavaScript loop into Array.map: for (let i = 0; i < xs.length; i++)"}},
      {"b",
       "arithmetic",
       {"What is 17 times 23? Explain step by step.", "Solve 3x + 5 = 20 for x.",
        "What is the sum of the integers from 1 to 100?", "Is 221 a prime number? Why?",
        "Compute 2 to the power of 12, then divide by 8."}},
      {"c",
       "history",
       {"Summarise the causes of the French Revolution in two sentences.",
        "Who was Charlemagne and why does he matter?",
        "Describe the fall of the Western Roman Empire.",
        "What was the Silk Road and what travelled along it?",
        "Why did the Ottoman Empire besiege Vienna in 1683?"}},
  };
  return w;
}

Status ensure_demo_model(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "config.json")) return Status::ok();
  SyntheticModelSpec spec;
  spec.arch = "qwen3_moe";
  spec.preset = "small";
  spec.seed = 2026;
  ProgressBar bar("generating the demo model in " + dir.string());
  Status status =
      write_synthetic_model(spec, dir, [&](uint64_t d, uint64_t t) { bar.update(d, t); });
  bar.finish();
  return status;
}

// Sends every node its prompts; prints the first answer of each node.
Status serve_prompts(DemoCluster& cluster, const Options& o, bool show_answers) {
  for (const Workload& w : workloads()) {
    uint64_t tokens = 0;
    double seconds = 0;
    for (int i = 0; i < o.prompts_per_node && i < static_cast<int>(w.prompts.size()); ++i) {
      const json body = {{"prompt", w.prompts[static_cast<size_t>(i)]},
                         {"max_tokens", o.max_tokens},
                         {"temperature", 0.8},
                         {"top_k", 40},
                         {"seed", 7 + i}};
      DMOE_ASSIGN_OR_RETURN(const json r, cluster.post(w.node, "/v1/generate", body));
      tokens += r["tokens"].size();
      seconds += (r.value("prefill_ms", 0.0) + r.value("decode_ms", 0.0)) / 1000.0;
      if (show_answers && i == 0) {
        std::printf("  node %s (%s) > %s\n    %s\n", w.node.c_str(), w.kind.c_str(),
                    w.prompts[0].c_str(), r.value("text", std::string()).c_str());
      }
    }
    std::printf("  node %s: %d %s prompts, %llu tokens generated, %.1f tok/s\n", w.node.c_str(),
                o.prompts_per_node, w.kind.c_str(), static_cast<unsigned long long>(tokens),
                seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0);
  }
  return Status::ok();
}

Result<json> settled_status(DemoCluster& cluster) {
  // The current report windows close (1 s) and reach the scheduler.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  DMOE_RETURN_IF_ERROR(cluster.wait_reports_delivered(std::chrono::seconds(20)));
  return cluster.query("status");
}

Status run_cluster(DemoCluster& cluster, const std::filesystem::path& model_dir, const Options& o) {
  DMOE_ASSIGN_OR_RETURN(auto checkpoint, Checkpoint::open(model_dir));
  uint64_t all_experts = 0;
  const ModelConfig& config = checkpoint->config();
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config.n_experts; ++e) all_experts += checkpoint->expert_bytes(l, e);
  }
  // Unequal workstations: room for 60 %, 45 % and 30 % of the experts.
  const std::vector<DemoNodeSpec> nodes = {
      {"a", all_experts * 60 / 100}, {"b", all_experts * 45 / 100}, {"c", all_experts * 30 / 100}};
  std::printf("starting a scheduler and 3 nodes on 127.0.0.1 (logs in %s)\n",
              cluster.work_dir().c_str());
  for (const DemoNodeSpec& n : nodes) {
    std::printf(
        "  node %s: memory for %s of experts (%.0f%% of the %s the model has)\n", n.id.c_str(),
        bytes_text(static_cast<double>(n.expert_memory_bytes)).c_str(),
        100.0 * static_cast<double>(n.expert_memory_bytes) / static_cast<double>(all_experts),
        bytes_text(static_cast<double>(all_experts)).c_str());
  }
  std::vector<std::string> ids;
  for (const DemoNodeSpec& n : nodes) ids.push_back(n.id);
  DMOE_RETURN_IF_ERROR(cluster.make_keys(ids));
  std::printf("keys for the scheduler, an operator and each node in %s (CurveZMQ on)\n",
              (cluster.work_dir() / "keys").c_str());
  DMOE_RETURN_IF_ERROR(cluster.start_scheduler());
  std::printf("  dashboard: %s\n", cluster.dashboard_url().c_str());
  DMOE_RETURN_IF_ERROR(cluster.start_nodes(nodes, 1));
  for (const auto& [id, url] : cluster.chat_urls()) {
    std::printf("  node %s chat page: %s\n", id.c_str(), url.c_str());
  }
  DMOE_RETURN_IF_ERROR(cluster.wait_until_serving(std::chrono::seconds(120)));
  std::printf("all nodes healthy and serving the cold-start placement\n\n");

  std::printf("== prompts of three kinds, one kind per node\n");
  DMOE_RETURN_IF_ERROR(serve_prompts(cluster, o, true));
  DMOE_ASSIGN_OR_RETURN(const json before, settled_status(cluster));
  std::printf("\n== status before the placement round (dancemoe status)\n%s\n",
              format_status(before).c_str());

  std::printf("== forcing one placement round (dancemoe placement round)\n");
  DMOE_ASSIGN_OR_RETURN(const json round, cluster.query("round"));
  (void)round;
  DMOE_ASSIGN_OR_RETURN(const json decided, cluster.query("status"));
  const json& decision = decided["last_decision"];
  std::printf("  %s\n", decision_text(decision).c_str());
  if (decision.value("adopt", false)) {
    const uint64_t version = decision.value("version", uint64_t{0});
    std::printf("  migrating to version %llu: nodes load their new experts in the background\n",
                static_cast<unsigned long long>(version));
    DMOE_RETURN_IF_ERROR(cluster.wait_for_version(version, std::chrono::seconds(120)));
    std::printf("  version %llu committed on every node\n\n",
                static_cast<unsigned long long>(version));
  } else {
    std::printf("  the gate kept the current placement\n\n");
  }

  std::printf("== the same kinds of prompts again\n");
  DMOE_RETURN_IF_ERROR(serve_prompts(cluster, o, false));
  DMOE_ASSIGN_OR_RETURN(const json after, settled_status(cluster));
  std::printf("\n== status after the placement round\n%s\n", format_status(after).c_str());

  std::printf("== local-hit ratio per node (share of its tokens' experts held locally)\n");
  for (const json& n : after["nodes"]["list"]) {
    std::string was = "-";
    for (const json& b : before["nodes"]["list"]) {
      if (b["id"] == n["id"]) was = ratio_text(b["local_hit_ratio_since_adoption"]);
    }
    std::printf("  node %s: %s before -> %s after\n", n["id"].get<std::string>().c_str(),
                was.c_str(), ratio_text(n["local_hit_ratio_since_adoption"]).c_str());
  }
  return Status::ok();
}

// --keep: the cluster stays up until SIGINT or SIGTERM (or one of its
// processes exits). The children run in their own process groups, so a
// Ctrl-C reaches only the demo, which then stops them in order.
Status keep_running(DemoCluster& cluster) {
  std::printf("\n== the cluster stays up (--keep); Ctrl-C stops it\n");
  std::printf("  dashboard: %s\n", cluster.dashboard_url().c_str());
  std::printf("  dashboard as the operator (may run rounds): %s\n",
              cluster.operator_dashboard_url().c_str());
  for (const auto& [id, url] : cluster.chat_urls()) {
    std::printf("  node %s chat page: %s\n", id.c_str(), url.c_str());
  }
  std::printf("  scheduler: %s (dancemoe status --scheduler %s)\n",
              cluster.scheduler_endpoint().c_str(), cluster.scheduler_endpoint().c_str());
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // Blocked only now: the children, started before, keep default handling.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const timespec one_second = {1, 0};
  while (true) {
    const int signal = sigtimedwait(&stop_signals, nullptr, &one_second);
    if (signal == SIGINT || signal == SIGTERM) {
      std::printf("\nstopping (%s)\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
      return Status::ok();
    }
    DMOE_RETURN_IF_ERROR(cluster.check_running());
  }
}

int run(const Options& o) {
  // Line by line even into a pipe, so a log of an interrupted demo is whole.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool own_model = o.model.empty();
  const std::filesystem::path model_dir =
      std::filesystem::absolute(own_model ? o.demo_dir : o.model);
  if (own_model) {
    std::printf(
        "DanceMoE demo: the model in %s has RANDOM weights (generated here; no weights can be "
        "downloaded), so its text is not meaningful. Pass --model DIR for a real checkpoint.\n\n",
        model_dir.c_str());
    if (Status s = ensure_demo_model(model_dir); !s.is_ok()) return report_failure("demo", s);
  }
  std::filesystem::path work = o.work_dir;
  if (work.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "dancemoe-demo-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      return report_failure("demo",
                            internal_error("cannot create a directory in " +
                                           std::filesystem::temp_directory_path().string()));
    }
    work = pattern;
  } else {
    std::filesystem::create_directories(work);
  }
  Status status;
  {
    DemoCluster cluster(model_dir, work);
    status = run_cluster(cluster, model_dir, o);
    if (status.is_ok() && o.keep) status = keep_running(cluster);
    cluster.stop();
  }
  std::printf("stopped the scheduler and the 3 nodes\n");
  if (!status.is_ok()) {
    std::fprintf(stderr, "logs kept in %s\n", work.c_str());
    return report_failure("demo", status);
  }
  if (!o.keep && o.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(work, ec);
  } else {
    std::printf("logs and the scheduler's database are in %s\n", work.c_str());
  }
  std::printf("demo finished.\n");
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = root.add_subcommand(
      "demo",
      "Run a scheduler and three nodes on this machine with the demo model, send prompts, force "
      "a placement round and show local-hit ratios before and after");
  cmd->add_option("--model", o->model, "use this model directory instead of the demo model");
  cmd->add_option("--demo-dir", o->demo_dir, "where the demo model is kept")->capture_default_str();
  cmd->add_option("--work-dir", o->work_dir,
                  "logs and the scheduler's database (default: a temporary directory, removed "
                  "after a successful run)");
  cmd->add_option("--max-tokens", o->max_tokens, "tokens per answer")->capture_default_str();
  cmd->add_option("--prompts", o->prompts_per_node, "prompts per node and round (1 to 5)")
      ->check(CLI::Range(1, 5))
      ->capture_default_str();
  cmd->add_flag("--keep", o->keep,
                "keep the cluster running after the demo (dashboard and chat pages stay up) "
                "until Ctrl-C, and keep the directory with the logs");
  cmd->callback([o, exit_code] { *exit_code = run(*o); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
