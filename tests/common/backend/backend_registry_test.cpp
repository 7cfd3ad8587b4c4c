// Backend selection through ModelRuntime::open: the CPU is the default, and a
// GPU asked for in a build without CUDA, or on a machine without a device,
// is a clear error rather than a crash or a silent fall back to the CPU.
// Flags that are wrong whatever the machine are refused before any device
// is opened.
#include "common/backend/backend_registry.h"

#include <doctest/doctest.h>

#include "common/assembly/model_runtime.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

#if DMOE_HAVE_CUDA
#include "kernels/cuda/device.cuh"
#endif

namespace dancemoe::testing {
namespace {

Result<std::unique_ptr<ModelRuntime>> open_on(
    const std::filesystem::path& dir, backend::DeviceOptions devices,
    ComputePrecision precision = ComputePrecision::kBF16) {
  RuntimeOptions options;
  options.devices.n_threads = 1;
  options.precision = precision;
  options.devices = std::move(devices);
  return ModelRuntime::open(dir, options);
}

// Devices this process can use (0 in a build without CUDA).
int n_cuda_devices() {
#if DMOE_HAVE_CUDA
  std::string why;
  return kernels::cuda::device_count(&why);
#else
  return 0;
#endif
}

TEST_CASE("backend registry: a model opens on the CPU backend by default") {
  TempDir dir("registry-cpu");
  write_model(tiny_spec(9), dir.path());
  Result<std::unique_ptr<ModelRuntime>> m = open_on(dir.path(), {});
  REQUIRE_MESSAGE(m.is_ok(), m.status().to_string());
  CHECK((*m)->description().rfind("cpu", 0) == 0);
  CHECK((*m)->expert_computer().describe().rfind("cpu", 0) == 0);
}

TEST_CASE("backend registry: cuda without a CUDA build or without a device is a clear error") {
  if (n_cuda_devices() > 0) {
    MESSAGE("SKIPPED: this machine has a CUDA device (the cuda suites test loading on it)");
    return;
  }
  TempDir dir("registry-nodev");
  write_model(tiny_spec(9), dir.path());
  for (const char* list : {"cuda:0", "cpu,cuda:1"}) {
    CAPTURE(list);
    backend::DeviceOptions devices;
    devices.devices = *backend::parse_device_list(list);
    Result<std::unique_ptr<ModelRuntime>> m = open_on(dir.path(), devices);
    REQUIRE_FALSE(m.is_ok());
    CHECK(m.status().code() == StatusCode::kUnavailable);
    const std::string& message = m.status().message();
    MESSAGE("error: " << message);
    CHECK(message.find(std::string("--devices ") + list) != std::string::npos);
#if DMOE_HAVE_CUDA
    CHECK(message.find("no CUDA device") != std::string::npos);
#else
    CHECK(message.find("this build has no CUDA backend") != std::string::npos);
#endif
  }
}

TEST_CASE("backend registry: f32 on a GPU is refused before any device is opened") {
  TempDir dir("registry-flags");
  write_model(tiny_spec(9), dir.path());
  backend::DeviceOptions devices;
  devices.devices = *backend::parse_device_list("cuda:0");
  Result<std::unique_ptr<ModelRuntime>> m = open_on(dir.path(), devices, ComputePrecision::kF32);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().code() == StatusCode::kInvalidArgument);
  CHECK(m.status().message().find("--precision bf16") != std::string::npos);
}

TEST_CASE("backend registry: a placement of the wrong length is refused") {
  TempDir dir("registry-placement");
  write_model(tiny_spec(9), dir.path());
  RuntimeOptions options;
  options.devices.n_threads = 1;
  options.expert_devices = {0, 0, 0};
  Result<std::unique_ptr<ModelRuntime>> m = ModelRuntime::open(dir.path(), options);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().code() == StatusCode::kInvalidArgument);
  CHECK(m.status().message().find("expert_devices names 3 devices for") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::testing
