// Parsing of the device list and per-device memory (--devices,
// --device-memory), how cpu entries map onto cores and NUMA nodes, and what
// the registry says about this build.
#include "common/backend/device_options.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "common/backend/backend_registry.h"
#include "common/backend/cpu/cpu_topology.h"

namespace dancemoe::backend {
namespace {

TEST_CASE("device list: cpu, cpu:N and cuda:N parse, in order") {
  Result<std::vector<DeviceName>> cpu = parse_device_list("cpu");
  REQUIRE(cpu.is_ok());
  REQUIRE(cpu->size() == 1);
  CHECK((*cpu)[0].is_cpu());
  CHECK((*cpu)[0].index == -1);
  Result<std::vector<DeviceName>> mixed = parse_device_list("cuda:1,cpu:0,cpu:1");
  REQUIRE(mixed.is_ok());
  REQUIRE(mixed->size() == 3);
  CHECK((*mixed)[0].text() == "cuda:1");
  CHECK((*mixed)[1].text() == "cpu:0");
  CHECK((*mixed)[2].text() == "cpu:1");
  DeviceOptions options;
  options.devices = *mixed;
  CHECK(options.first_cuda() == 0);
  CHECK(options.find("cpu:1") == 2);
  CHECK(options.find("cpu") == -1);
  CHECK(options.text() == "cuda:1,cpu:0,cpu:1");
}

TEST_CASE("device list: malformed lists name the text and the forms expected") {
  for (const char* text :
       {"gpu", "cuda", "cuda:", "cuda:x", "cpu:0,", "cuda:-1", "CPU", "cpu;cpu:1", ""}) {
    CAPTURE(text);
    Result<std::vector<DeviceName>> r = parse_device_list(text);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("--devices '" + std::string(text) + "'") != std::string::npos);
    CHECK(r.status().message().find("cpu:N and cuda:N") != std::string::npos);
  }
  Result<std::vector<DeviceName>> twice = parse_device_list("cpu:0,cpu:0");
  REQUIRE_FALSE(twice.is_ok());
  CHECK(twice.status().message().find("cpu:0 is listed twice") != std::string::npos);
  Result<std::vector<DeviceName>> overlap = parse_device_list("cpu,cpu:1");
  REQUIRE_FALSE(overlap.is_ok());
  CHECK(overlap.status().message().find("overlap") != std::string::npos);
}

TEST_CASE("device memory: DEV=BYTES for a listed device, once") {
  DeviceOptions options;
  options.devices = *parse_device_list("cpu:0,cpu:1");
  REQUIRE(parse_device_memory("cpu:1=1.5G", &options).is_ok());
  CHECK(options.expert_memory.at("cpu:1") == 1536ull << 20);
  CHECK(parse_device_memory("cpu:1=1G", &options).message().find("given twice") !=
        std::string::npos);
  CHECK(parse_device_memory("cpu:2=1G", &options).message().find("not among --devices") !=
        std::string::npos);
  CHECK(parse_device_memory("cpu:0", &options).message().find("DEVICE=BYTES") != std::string::npos);
  CHECK(parse_device_memory("cpu:0=-5", &options).code() == StatusCode::kInvalidArgument);
}

CpuTopology one_socket(int n_cpus) {
  CpuTopology t;
  for (int c = 0; c < n_cpus; ++c) t.allowed_cpus.push_back(c);
  t.numa_nodes.push_back({0, t.allowed_cpus, 64ull << 30, 32ull << 30});
  t.total_bytes = 64ull << 30;
  t.available_bytes = 48ull << 30;
  return t;
}

TEST_CASE("cpu devices: on one socket cpu:N are equal slices of the cores, each its own threads") {
  const CpuTopology t = one_socket(6);
  Result<std::vector<CpuSlice>> slices =
      resolve_cpu_devices(*parse_device_list("cpu:0,cuda:0,cpu:1"), t, 0);
  REQUIRE(slices.is_ok());
  REQUIRE(slices->size() == 2);
  CHECK((*slices)[0].name == "cpu:0");
  CHECK((*slices)[0].cpus == std::vector<int>{0, 1, 2});
  CHECK((*slices)[1].cpus == std::vector<int>{3, 4, 5});
  CHECK((*slices)[1].n_threads == 3);
  CHECK((*slices)[0].numa_node == -1);
  CHECK((*slices)[0].available_bytes == 24ull << 30);  // an equal share of MemAvailable
  Result<std::vector<CpuSlice>> whole = resolve_cpu_devices(*parse_device_list("cpu"), t, 4);
  REQUIRE(whole.is_ok());
  CHECK((*whole)[0].cpus.empty());  // not pinned
  CHECK((*whole)[0].n_threads == 4);
  Result<std::vector<CpuSlice>> gap = resolve_cpu_devices(*parse_device_list("cpu:0,cpu:2"), t, 0);
  REQUIRE_FALSE(gap.is_ok());
  CHECK(gap.status().message().find("list cpu:0 .. cpu:1") != std::string::npos);
  Result<std::vector<CpuSlice>> thin =
      resolve_cpu_devices(*parse_device_list("cpu:0,cpu:1,cpu:2"), one_socket(2), 0);
  REQUIRE_FALSE(thin.is_ok());
  CHECK(thin.status().message().find("only 2 cores") != std::string::npos);
}

TEST_CASE("cpu devices: with several NUMA nodes cpu:N is node N, its cores and memory") {
  CpuTopology t;
  t.allowed_cpus = {0, 1, 2, 3};
  t.numa_nodes = {{0, {0, 1}, 32ull << 30, 20ull << 30}, {1, {2, 3}, 32ull << 30, 10ull << 30}};
  Result<std::vector<CpuSlice>> slices = resolve_cpu_devices(*parse_device_list("cpu:1"), t, 0);
  REQUIRE(slices.is_ok());
  CHECK((*slices)[0].cpus == std::vector<int>{2, 3});
  CHECK((*slices)[0].numa_node == 1);
  CHECK((*slices)[0].available_bytes == 10ull << 30);
  Result<std::vector<CpuSlice>> absent = resolve_cpu_devices(*parse_device_list("cpu:4"), t, 0);
  REQUIRE_FALSE(absent.is_ok());
  CHECK(absent.status().message().find("no NUMA node 4") != std::string::npos);
  CHECK(absent.status().message().find("nodes with cores: 0,1") != std::string::npos);
}

TEST_CASE("cpu topology: the /sys cpulist form") {
  CHECK(parse_cpu_list("0-3,8,10-11") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("5") == std::vector<int>{5});
  CHECK(parse_cpu_list("3-1").empty());
  CHECK(parse_cpu_list("x").empty());
  const CpuTopology here = CpuTopology::read();
  CHECK_FALSE(here.allowed_cpus.empty());
  CHECK(here.available_bytes > 0);
}

TEST_CASE("backend registry: lists cpu, and refuses a device backend without a GPU") {
  const std::vector<std::string> names = compiled_backends();
  CHECK(std::find(names.begin(), names.end(), "cpu") != names.end());
  BackendLoadRequest request;
  Result<DeviceModel> r = load_device_backend(request);
  CHECK_FALSE(r.is_ok());
#if !DMOE_HAVE_CUDA
  Result<GpuMemory> probe = probe_gpu(0);
  REQUIRE_FALSE(probe.is_ok());
  CHECK(probe.status().code() == StatusCode::kUnavailable);
  CHECK(probe.status().message().find("no CUDA backend") != std::string::npos);
#endif
}

}  // namespace
}  // namespace dancemoe::backend
