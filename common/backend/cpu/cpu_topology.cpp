#include "common/backend/cpu/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dancemoe::backend {
namespace {

std::string read_first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The value in kB of `key` in a meminfo file ("MemTotal:", "Node 0 MemFree:"), as bytes.
uint64_t meminfo_bytes(const std::filesystem::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(key);
    if (at == std::string::npos) continue;
    std::istringstream fields(line.substr(at + key.size()));
    uint64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& sorted_b) {
  std::vector<int> out;
  for (int x : a) {
    if (std::binary_search(sorted_b.begin(), sorted_b.end(), x)) out.push_back(x);
  }
  return out;
}

std::string join(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t dash = item.find('-');
    try {
      const int lo = std::stoi(item.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
      if (lo < 0 || hi < lo || hi > 1 << 20) return {};
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    } catch (const std::exception&) {
      return {};
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

CpuTopology CpuTopology::read() {
  CpuTopology t;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) t.allowed_cpus.push_back(c);
    }
  }
  if (t.allowed_cpus.empty()) t.allowed_cpus.push_back(0);
  t.total_bytes = meminfo_bytes("/proc/meminfo", "MemTotal:");
  t.available_bytes = meminfo_bytes("/proc/meminfo", "MemAvailable:");
  const std::filesystem::path root = "/sys/devices/system/node";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4) continue;
    NumaNode node;
    try {
      node.id = std::stoi(name.substr(4));
    } catch (const std::exception&) {
      continue;
    }
    node.cpus =
        intersect(parse_cpu_list(read_first_line(entry.path() / "cpulist")), t.allowed_cpus);
    node.total_bytes = meminfo_bytes(entry.path() / "meminfo", "MemTotal:");
    node.free_bytes = meminfo_bytes(entry.path() / "meminfo", "MemFree:");
    t.numa_nodes.push_back(std::move(node));
  }
  std::sort(t.numa_nodes.begin(), t.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return t;
}

Result<std::vector<CpuSlice>> resolve_cpu_devices(const std::vector<DeviceName>& devices,
                                                  const CpuTopology& topology, int n_threads) {
  std::vector<const DeviceName*> sliced;
  for (const DeviceName& d : devices) {
    if (d.is_cpu() && d.index >= 0) sliced.push_back(&d);
  }
  const bool by_numa = topology.numa_nodes.size() >= 2;
  const int n_allowed = static_cast<int>(topology.allowed_cpus.size());
  std::vector<CpuSlice> out;
  for (const DeviceName& d : devices) {
    if (!d.is_cpu()) continue;
    CpuSlice slice;
    slice.name = d.text();
    if (d.index < 0) {
      slice.n_threads = n_threads > 0 ? n_threads : n_allowed;
      slice.total_bytes = topology.total_bytes;
      slice.available_bytes = topology.available_bytes;
      out.push_back(std::move(slice));
      continue;
    }
    if (by_numa) {
      const auto node = std::find_if(topology.numa_nodes.begin(), topology.numa_nodes.end(),
                                     [&](const NumaNode& n) { return n.id == d.index; });
      if (node == topology.numa_nodes.end() || node->cpus.empty()) {
        std::vector<int> ids;
        for (const NumaNode& n : topology.numa_nodes) {
          if (!n.cpus.empty()) ids.push_back(n.id);
        }
        return invalid_argument(
            "--devices " + d.text() + ": this machine has no NUMA node " + std::to_string(d.index) +
            " with cores this process may use (nodes with cores: " + join(ids) + ")");
      }
      slice.cpus = node->cpus;
      slice.numa_node = node->id;
      slice.total_bytes = node->total_bytes;
      slice.available_bytes = node->free_bytes;
    } else {
      const int k = static_cast<int>(sliced.size());
      if (d.index >= k) {
        return invalid_argument(
            "--devices " + d.text() +
            ": this machine has one NUMA node, so cpu:N names the N-th of " + std::to_string(k) +
            " equal slices of its cores; list cpu:0 .. cpu:" + std::to_string(k - 1));
      }
      if (k > n_allowed) {
        return invalid_argument("--devices lists " + std::to_string(k) +
                                " cpu:N slices but this process may run on only " +
                                std::to_string(n_allowed) + " cores");
      }
      const int begin = d.index * n_allowed / k;
      const int end = (d.index + 1) * n_allowed / k;
      slice.cpus.assign(topology.allowed_cpus.begin() + begin, topology.allowed_cpus.begin() + end);
      slice.total_bytes = topology.total_bytes / static_cast<uint64_t>(k);
      slice.available_bytes = topology.available_bytes / static_cast<uint64_t>(k);
    }
    slice.n_threads = static_cast<int>(slice.cpus.size());
    out.push_back(std::move(slice));
  }
  return out;
}

}  // namespace dancemoe::backend
