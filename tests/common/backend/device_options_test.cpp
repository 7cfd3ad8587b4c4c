// Parsing of the device selection and memory budgets (--device,
// --device-budget), and what the registry says about this build.
#include "common/backend/device_options.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "common/backend/backend_registry.h"

namespace dancemoe::backend {
namespace {

TEST_CASE("device options: cpu, cuda and lists of GPU ordinals parse") {
  Result<DeviceSelection> cpu = parse_device("cpu");
  REQUIRE(cpu.is_ok());
  CHECK(cpu->cpu);
  Result<DeviceSelection> cuda = parse_device("cuda");
  REQUIRE(cuda.is_ok());
  CHECK_FALSE(cuda->cpu);
  CHECK(cuda->cuda_ordinals == std::vector<int>{0});
  Result<DeviceSelection> two = parse_device("cuda:1,0");
  REQUIRE(two.is_ok());
  CHECK(two->cuda_ordinals == std::vector<int>{1, 0});
}

TEST_CASE("device options: malformed selections name the text and the forms expected") {
  for (const char* text : {"gpu", "cuda:", "cuda:x", "cuda:0,", "cuda:-1", "CUDA:0", "cuda:0;1"}) {
    Result<DeviceSelection> r = parse_device(text);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find(text) != std::string::npos);
    CHECK(r.status().message().find("cuda:N") != std::string::npos);
  }
  Result<DeviceSelection> twice = parse_device("cuda:0,0");
  REQUIRE_FALSE(twice.is_ok());
  CHECK(twice.status().message().find("listed twice") != std::string::npos);
}

TEST_CASE("backend registry: lists cpu, and refuses a device backend for cpu") {
  const std::vector<std::string> names = compiled_backends();
  CHECK(std::find(names.begin(), names.end(), "cpu") != names.end());
  BackendLoadRequest request;
  request.options.device = "cpu";
  Result<DeviceModel> r = load_device_backend(request);
  CHECK_FALSE(r.is_ok());
#if !DMOE_HAVE_CUDA
  request.options.device = "cuda:0";
  Result<DeviceModel> cuda = load_device_backend(request);
  REQUIRE_FALSE(cuda.is_ok());
  CHECK(cuda.status().code() == StatusCode::kUnavailable);
  CHECK(cuda.status().message().find("no CUDA backend") != std::string::npos);
#endif
}

}  // namespace
}  // namespace dancemoe::backend
