// Load benchmark (issue 14): how long opening a model takes and how much
// memory it holds, for GGUF files (weights used in place in the memory
// mapping) against the bf16 safetensors directory (weights read into memory).
// Each model is measured in its own child process (fork), so that page
// tables and peak RSS are its alone: open time, the time of a first forward
// (128-token prompt, which pages the weights in), then 32 decoded tokens;
// peak RSS (VmHWM) against the file size.
//
//   build/release/tests/bench_gguf_load [--dir DIR] [MODEL...]
//
// Without models: DIR/medium, DIR/medium-q8_0.gguf, DIR/medium-q4_k_m.gguf
// (bench_quant_model writes them). Target: peak RSS <= 1.1 x the GGUF's size.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"

using namespace dancemoe;

namespace {

uint64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

uint64_t model_file_bytes(const std::filesystem::path& p) {
  if (std::filesystem::is_regular_file(p)) return std::filesystem::file_size(p);
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(p)) {
    if (e.is_regular_file() &&
        (e.path().extension() == ".safetensors" || e.path().extension() == ".gguf")) {
      n += e.file_size();
    }
  }
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int measure(const std::filesystem::path& path) {
  const auto start = std::chrono::steady_clock::now();
  RuntimeOptions options;
  Result<std::vector<backend::DeviceName>> devices = backend::parse_device_list("cpu");
  if (!devices.is_ok()) return 1;
  options.devices.devices = *devices;
  options.devices.n_threads = 2;
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(path, options);
  if (!model.is_ok()) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  const double open_s = seconds_since(start);
  const uint64_t rss_open = peak_rss_bytes();
  Transformer& tf = (*model)->transformer();
  std::mt19937_64 rng(1);
  std::vector<int32_t> prompt(128);
  for (int32_t& id : prompt)
    id = static_cast<int32_t>(rng() % static_cast<uint64_t>(tf.config().vocab_size));
  Result<KvCache> cache = tf.new_cache(256);
  if (!cache.is_ok()) return 1;
  std::vector<float> logits;
  const auto first = std::chrono::steady_clock::now();
  if (!tf.forward(prompt, *cache, LogitsMode::kLast, &logits).is_ok()) return 1;
  const double first_s = seconds_since(first);
  for (int i = 0; i < 32; ++i) {
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (!tf.forward(std::span(&next, 1), *cache, LogitsMode::kLast, &logits).is_ok()) return 1;
  }
  const uint64_t file = model_file_bytes(path);
  const uint64_t rss = peak_rss_bytes();
  std::printf("%-40s %9.1f %9.3f %9.3f %12.1f %12.1f %10.1f %8.3f\n", path.filename().c_str(),
              file / 1e6, open_s, first_s, rss_open / 1e6, rss / 1e6,
              (*model)->resident_weight_bytes() / 1e6, static_cast<double>(rss) / file);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models";
  std::vector<std::filesystem::path> models;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else {
      models.push_back(argv[i]);
    }
  }
  if (models.empty()) {
    models = {dir / "medium", dir / "medium-q8_0.gguf", dir / "medium-q4_k_m.gguf"};
  }
  std::printf("%-40s %9s %9s %9s %12s %12s %10s %8s\n", "model", "file MB", "open s", "1st fwd s",
              "RSS open MB", "peak RSS MB", "weights MB", "RSS/file");
  int status = 0;
  for (const auto& m : models) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      const int rc = measure(m);
      std::fflush(stdout);  // _exit does not flush a pipe's or a file's buffer
      _exit(rc);
    }
    int wstatus = 0;
    waitpid(child, &wstatus, 0);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) status = 1;
  }
  std::printf("\ntarget (issue 14): a GGUF opens mmap-fast and peak RSS <= 1.1 x its size\n");
  return status;
}
