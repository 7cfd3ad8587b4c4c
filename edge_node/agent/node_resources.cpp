#include "edge_node/agent/node_resources.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

namespace dancemoe::node {

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

double measure_load_bandwidth(const Checkpoint& checkpoint, uint64_t max_bytes) {
  const ModelConfig& config = checkpoint.config();
  std::vector<uint8_t> buffer;
  uint64_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t l = 0; l < config.n_layers && done < max_bytes; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config.n_experts && done < max_bytes; ++e) {
      // A partial checkpoint measures on the experts it has.
      if (!checkpoint.has_expert_weights({static_cast<int32_t>(l), static_cast<int32_t>(e)})) {
        continue;
      }
      for (TensorRole role :
           {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
        const TensorLocation& t = checkpoint.tensor(role, l, e);
        buffer.resize(t.n_bytes);
        if (!checkpoint.read_tensor(t, buffer.data()).is_ok()) return 0.0;
        done += t.n_bytes;
      }
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s > 0 ? static_cast<double>(done) / s : 0.0;
}

Status write_json_atomically(const std::filesystem::path& path, const nlohmann::json& content) {
  const std::filesystem::path tmp =
      path.string() + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return unavailable("cannot write " + tmp.string());
    out << content.dump(2) << '\n';
    if (!out) return unavailable("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return unavailable("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                       ec.message());
  return Status::ok();
}

}  // namespace dancemoe::node
