// The device flags of the model-loading commands (--device, --device-budget,
// --dense-device, --max-batch-tokens): parsed by CLI11 as the commands do,
// then turned into backend::DeviceOptions.
#include "scheduler/cli/model/device_flags.h"

#include <doctest/doctest.h>

#include <CLI/CLI.hpp>
#include <vector>

namespace dancemoe::cli {
namespace {

// Parses `args` as a command with the device flags would.
DeviceFlags parse(std::vector<std::string> args) {
  CLI::App app("test");
  DeviceFlags flags;
  add_device_flags(&app, &flags);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  return flags;
}

TEST_CASE("device flags: the defaults run on the CPU") {
  Result<backend::DeviceOptions> options = device_options(parse({}));
  REQUIRE(options.is_ok());
  CHECK(options->device == "cpu");
  CHECK(options->budget_bytes.empty());
  CHECK_FALSE(options->dense_device.has_value());
  CHECK(options->max_batch_tokens == 512);
}

TEST_CASE("device flags: GPUs, budgets, dense device and batch size become device options") {
  Result<backend::DeviceOptions> options =
      device_options(parse({"--device", "cuda:1,0", "--device-budget", "20G,512M", "--dense-device",
                            "0", "--max-batch-tokens", "64"}));
  REQUIRE(options.is_ok());
  CHECK(options->device == "cuda:1,0");
  CHECK(options->budget_bytes == std::vector<uint64_t>{20ull << 30, 512ull << 20});
  REQUIRE(options->dense_device.has_value());
  CHECK(*options->dense_device == 0);
  CHECK(options->max_batch_tokens == 64);
}

TEST_CASE("device flags: malformed values are refused naming the flag and the value") {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"--device", "gpu0"}, "--device 'gpu0'"},
      {{"--device", "cuda:0,0"}, "listed twice"},
      {{"--device-budget", "20Q"}, "--device-budget"},
      {{"--device-budget", "20G,"}, "--device-budget: expected a byte size"},
      {{"--dense-device", "-3"}, "--dense-device -3"},
      {{"--max-batch-tokens", "0"}, "--max-batch-tokens 0"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.want);
    Result<backend::DeviceOptions> options = device_options(parse(c.args));
    REQUIRE_FALSE(options.is_ok());
    CHECK(options.status().code() == StatusCode::kInvalidArgument);
    CHECK(options.status().to_string().find(c.want) != std::string::npos);
  }
}

}  // namespace
}  // namespace dancemoe::cli
