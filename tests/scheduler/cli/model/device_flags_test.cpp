// The device flags of the model-loading commands (--devices,
// --device-memory, --threads, --max-batch-tokens, --expert-type, --kv-type): parsed by CLI11 as the
// commands do, then turned into backend::DeviceOptions -- the node's flags
// by the same names.
#include "scheduler/cli/model/device_flags.h"

#include <doctest/doctest.h>

#include <CLI/CLI.hpp>
#include <vector>

#include "common/assembly/model_runtime.h"

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

TEST_CASE("device flags: the defaults run on the whole CPU") {
  Result<backend::DeviceOptions> options = device_options(parse({}));
  REQUIRE(options.is_ok());
  CHECK(options->text() == "cpu");
  CHECK(options->expert_memory.empty());
  CHECK(options->n_threads == 0);
  CHECK(options->max_batch_tokens == 512);
}

TEST_CASE("device flags: devices, per-device memory, threads and batch size become options") {
  Result<backend::DeviceOptions> options = device_options(
      parse({"--devices", "cuda:1,cpu", "--device-memory", "cuda:1=20G", "--device-memory",
             "cpu=512M", "--threads", "3", "--max-batch-tokens", "64"}));
  REQUIRE(options.is_ok());
  CHECK(options->text() == "cuda:1,cpu");
  CHECK(options->first_cuda() == 0);
  CHECK(options->expert_memory.at("cuda:1") == 20ull << 30);
  CHECK(options->expert_memory.at("cpu") == 512ull << 20);
  CHECK(options->n_threads == 3);
  CHECK(options->max_batch_tokens == 64);
}

TEST_CASE("device flags: malformed values are refused naming the flag and the value") {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"--devices", "gpu0"}, "--devices 'gpu0'"},
      {{"--devices", "cuda:0,cuda:0"}, "listed twice"},
      {{"--devices", "cpu,cpu:1"}, "overlap"},
      {{"--device-memory", "cpu=20Q"}, "--device-memory cpu"},
      {{"--device-memory", "20G"}, "expected DEVICE=BYTES"},
      {{"--device-memory", "cuda:0=1G"}, "cuda:0 is not among --devices cpu"},
      {{"--device-memory", "cpu=1G", "--device-memory", "cpu=2G"}, "given twice"},
      {{"--threads", "-1"}, "--threads -1"},
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

TEST_CASE("device flags: --kv-type and --expert-type reach the runtime options, bad values named") {
  RuntimeOptions options;
  REQUIRE(apply_device_flags(parse({}), &options).is_ok());
  CHECK(options.kv_element == KvElement::kF32);
  REQUIRE(
      apply_device_flags(parse({"--kv-type", "bf16", "--expert-type", "q4_K"}), &options).is_ok());
  CHECK(options.kv_element == KvElement::kBF16);
  CHECK(options.expert_type == kernels::WeightType::kQ4_K);
  const Status kv = apply_device_flags(parse({"--kv-type", "f16"}), &options);
  CHECK(kv.code() == StatusCode::kInvalidArgument);
  CHECK(kv.message() == "--kv-type 'f16': expected f32 or bf16");
  const Status expert = apply_device_flags(parse({"--expert-type", "q3_K"}), &options);
  CHECK(expert.code() == StatusCode::kInvalidArgument);
  CHECK(expert.message().find("--expert-type 'q3_K'") != std::string::npos);
}

TEST_CASE("device flags: --rows-layout keeps the file's rows (no interleaved copies)") {
  RuntimeOptions options;
  REQUIRE(apply_device_flags(parse({}), &options).is_ok());
  CHECK(options.interleave_k);
  REQUIRE(apply_device_flags(parse({"--rows-layout"}), &options).is_ok());
  CHECK_FALSE(options.interleave_k);
}

}  // namespace
}  // namespace dancemoe::cli
