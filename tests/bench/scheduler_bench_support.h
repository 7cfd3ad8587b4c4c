// Shared pieces of the scheduler benchmarks (bench_scheduler_ingest,
// bench_scheduler_round, bench_scheduler_retention): an OLMoE-shaped model
// directory, OLMoE-shaped activation windows, the daemon as a child process
// with its CPU time read from /proc, and percentiles.
//
// OLMoE shape (OLMoE-1B-7B): 16 MoE layers x 64 experts, top-8; one expert
// (gate + up + down, bf16, hidden 2048, intermediate 1024) is 12,582,912
// bytes. The model directory written here has that layer/expert structure
// but a tiny hidden size (the scheduler reads only config.json and the
// safetensors headers, and the ingest benchmark does not depend on expert
// bytes); benchmarks that need real expert sizes use ModelInfo::synthetic
// with kOlmoeExpertBytes.
//
// Header-only: every tests/bench/*.cpp is its own executable and the bench
// targets do not link tests/support (which needs doctest).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/model/safetensors_writer.h"
#include "common/proto/messages.h"

extern char** environ;

namespace dancemoe::bench {

inline constexpr int kOlmoeLayers = 16;
inline constexpr int kOlmoeExperts = 64;
inline constexpr int kOlmoeTopK = 8;
inline constexpr uint64_t kOlmoeExpertBytes = uint64_t{3} * 2048 * 1024 * 2;

// A qwen3_moe checkpoint with 16 MoE layers x 64 experts, top-8, and tiny
// matrices (hidden 16), zero-filled. Returns its model id.
inline Result<std::string> write_olmoe_shape_model(const std::filesystem::path& dir) {
  constexpr int64_t kHidden = 16, kHeads = 2, kKvHeads = 1, kHeadDim = 8, kVocab = 64;
  constexpr int64_t kMoeInter = 8, kDenseInter = 16;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return unavailable(dir.string() + ": cannot create (" + ec.message() + ")");
  nlohmann::ordered_json c;
  c["architectures"] = {"Qwen3MoeForCausalLM"};
  c["model_type"] = "qwen3_moe";
  c["vocab_size"] = kVocab;
  c["hidden_size"] = kHidden;
  c["intermediate_size"] = kDenseInter;
  c["moe_intermediate_size"] = kMoeInter;
  c["num_hidden_layers"] = kOlmoeLayers;
  c["num_attention_heads"] = kHeads;
  c["num_key_value_heads"] = kKvHeads;
  c["head_dim"] = kHeadDim;
  c["hidden_act"] = "silu";
  c["max_position_embeddings"] = 4096;
  c["rope_theta"] = 10000.0;
  c["rms_norm_eps"] = 1e-6;
  c["tie_word_embeddings"] = false;
  c["attention_bias"] = false;
  c["num_experts"] = kOlmoeExperts;
  c["num_experts_per_tok"] = kOlmoeTopK;
  c["norm_topk_prob"] = false;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = nlohmann::json::array();
  c["use_sliding_window"] = false;
  c["torch_dtype"] = "bfloat16";
  {
    std::ofstream out(dir / "config.json");
    out << c.dump(2) << "\n";
    if (!out) return unavailable((dir / "config.json").string() + ": cannot write");
  }
  std::vector<TensorSpec> tensors;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    tensors.push_back({std::move(name), DType::kBF16, std::move(shape)});
  };
  add("model.embed_tokens.weight", {kVocab, kHidden});
  for (int l = 0; l < kOlmoeLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {kHidden});
    add(p + "post_attention_layernorm.weight", {kHidden});
    add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden});
    add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden});
    add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden});
    add(p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim});
    add(p + "self_attn.q_norm.weight", {kHeadDim});
    add(p + "self_attn.k_norm.weight", {kHeadDim});
    add(p + "mlp.gate.weight", {kOlmoeExperts, kHidden});
    for (int e = 0; e < kOlmoeExperts; ++e) {
      const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
      add(ep + "gate_proj.weight", {kMoeInter, kHidden});
      add(ep + "up_proj.weight", {kMoeInter, kHidden});
      add(ep + "down_proj.weight", {kHidden, kMoeInter});
    }
  }
  add("model.norm.weight", {kHidden});
  add("lm_head.weight", {kVocab, kHidden});
  DMOE_RETURN_IF_ERROR(write_safetensors(
      dir / "model.safetensors", tensors,
      [](size_t, std::span<uint8_t> bytes) { std::fill(bytes.begin(), bytes.end(), 0); }));
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::open(dir));
  return checkpoint->model_id();
}

// Per-layer expert popularity: a Zipf-like law over a per-layer random
// permutation of the experts (real routers are skewed, and differently in
// every layer). weights[layer][expert], each layer sums to 1.
inline std::vector<std::vector<double>> expert_popularity(uint64_t seed, double skew = 0.8) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<std::vector<double>> weights(kOlmoeLayers, std::vector<double>(kOlmoeExperts));
  for (auto& layer : weights) {
    std::vector<int> order(kOlmoeExperts);
    for (int e = 0; e < kOlmoeExperts; ++e) order[e] = e;
    std::shuffle(order.begin(), order.end(), rng);
    double total = 0.0;
    for (int r = 0; r < kOlmoeExperts; ++r) {
      layer[order[r]] = 1.0 / std::pow(r + 1.0, skew);
      total += layer[order[r]];
    }
    for (double& w : layer) w /= total;
  }
  return weights;
}

// One window of `tokens` tokens routed top-8 by `popularity`: counts per
// (layer, expert), sorted, zeros left out, each count <= tokens and each
// layer summing to tokens x 8 at most (what the scheduler checks). Counts
// are the expected values with +-20% noise, rounded.
inline std::vector<proto::ExpertCount> window_counts(
    const std::vector<std::vector<double>>& popularity, uint64_t tokens, std::mt19937& rng) {
  std::uniform_real_distribution<double> noise(0.8, 1.2);
  std::vector<proto::ExpertCount> counts;
  for (int l = 0; l < kOlmoeLayers; ++l) {
    uint64_t layer_sum = 0;
    for (int e = 0; e < kOlmoeExperts; ++e) {
      const double expected = static_cast<double>(tokens * kOlmoeTopK) * popularity[l][e];
      uint64_t c = static_cast<uint64_t>(std::llround(expected * noise(rng)));
      c = std::min(c, tokens);
      c = std::min(c, tokens * kOlmoeTopK - layer_sum);
      layer_sum += c;
      if (c > 0) {
        counts.push_back(
            {static_cast<uint16_t>(l), static_cast<uint16_t>(e), static_cast<uint32_t>(c)});
      }
    }
  }
  return counts;
}

// Local and remote expert-call statistics of a window: every activation is
// one call, a `local_share` of them local (they count as local hits too).
inline void fill_call_stats(proto::ActivationReport* r, const std::vector<std::string>& peers,
                            double local_share, std::mt19937& rng) {
  uint64_t activations = 0;
  for (const proto::ExpertCount& c : r->counts) activations += c.count;
  r->local_hits = static_cast<uint64_t>(static_cast<double>(activations) * local_share);
  r->local_calls = r->local_hits;
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  r->local_mean_latency_us = 120.0 * jitter(rng);
  r->local_p99_latency_us = 2.5 * r->local_mean_latency_us;
  const uint64_t remote = activations - r->local_hits;
  r->remote.clear();
  for (size_t p = 0; p < peers.size(); ++p) {
    const uint64_t calls = remote / peers.size() + (p < remote % peers.size() ? 1 : 0);
    const double mean = 1800.0 * jitter(rng);
    r->remote.push_back({peers[p], calls, mean, 3.0 * mean, calls * 2 * 2048 * 2, 0});
  }
}

// The real daemon as a child process with stdout/stderr in a log file.
// Killed (SIGTERM, then SIGKILL) on destruction.
class Daemon {
 public:
  Daemon(std::vector<std::string> argv, const std::filesystem::path& log) {
    std::vector<char*> c;
    for (std::string& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, c[0], &actions, nullptr, c.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Daemon() { stop(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  // SIGTERM, up to 10 s for a clean stop, then SIGKILL. Exit status or -1.
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }

 private:
  pid_t pid_ = -1;
};

// utime + stime of a process in seconds (/proc/PID/stat fields 14 and 15,
// counted after the parenthesised command name, which may hold spaces).
inline std::optional<double> process_cpu_s(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Waits for a file with content (a --ready-file); false on timeout.
inline bool wait_for_file(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Nearest-rank quantile (q in [0, 1]); 0 for no samples.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// A fresh directory under `parent` (default: the system temp directory).
inline std::filesystem::path make_temp_dir(const std::string& prefix,
                                           std::filesystem::path parent = {}) {
  if (parent.empty()) parent = std::filesystem::temp_directory_path();
  std::string pattern = (parent / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return {};
  return pattern;
}

}  // namespace dancemoe::bench
