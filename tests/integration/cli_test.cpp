// The executables as a user runs them: real processes, exit codes, output.
#include <doctest/doctest.h>

#include <filesystem>

#include "common/tensor/npy.h"
#include "tests/integration/cli_path.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace dancemoe {
namespace {

using testing::run_process;

}  // namespace

TEST_CASE("cli: every executable prints its help") {
  for (const std::string exe : {DMOE_CLI_PATH, DMOE_NODE_PATH, DMOE_SCHEDULER_PATH}) {
    auto r = run_process({exe, "--help"});
    CAPTURE(exe);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Usage:") != std::string::npos);
  }
  auto r = run_process({kCli, "--help"});
  for (const char* command :
       {"make-model", "logits", "generate", "tokenize", "model-info", "demo"}) {
    CHECK(r.out.find(command) != std::string::npos);
  }
}

TEST_CASE("cli: make-model, model-info and logits write a usable checkpoint and .npy") {
  testing::TempDir dir("cli");
  const std::string model = (dir.path() / "m").string();
  auto made = run_process({kCli, "make-model", "--arch", "mixtral", "--preset", "tiny", "--out",
                           model, "--seed", "4", "--shards", "2"});
  REQUIRE(made.exit_code == 0);
  auto info = run_process({kCli, "model-info", "--model", model});
  REQUIRE(info.exit_code == 0);
  CHECK(info.out.find("\"architecture\": \"MixtralForCausalLM\"") != std::string::npos);
  CHECK(info.out.find("\"files\": 2") != std::string::npos);

  const std::string npy = (dir.path() / "logits.npy").string();
  auto logits = run_process({kCli, "logits", "--model", model, "--ids", "3,17,250", "--out", npy});
  INFO(logits.err);
  REQUIRE(logits.exit_code == 0);
  auto array = read_npy_f32(npy);
  REQUIRE(array.is_ok());
  CHECK(array->shape == std::vector<int64_t>{3, 512});

  // The same numbers as the in-process forward.
  auto in_process = testing::open_model(model);
  auto cache = in_process->transformer().new_cache(3);
  std::vector<float> expected;
  const std::vector<int32_t> ids = {3, 17, 250};
  REQUIRE(in_process->transformer().forward(ids, *cache, LogitsMode::kAll, &expected).is_ok());
  CHECK(testing::max_abs_diff(expected, array->data) == 0.0f);
}

TEST_CASE("cli: logits works without tokenizer files and rejects bad ids with exit code 2") {
  testing::TempDir dir("cli-ids");
  const std::string model = (dir.path() / "m").string();
  REQUIRE(run_process({kCli, "make-model", "--preset", "tiny", "--no-tokenizer", "--out", model})
              .exit_code == 0);
  const std::string npy = (dir.path() / "l.npy").string();
  CHECK(run_process({kCli, "logits", "--model", model, "--ids", "1,2", "--out", npy}).exit_code ==
        0);
  auto bad = run_process({kCli, "logits", "--model", model, "--ids", "1,x,3", "--out", npy});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--ids: item 2 ('x')") != std::string::npos);
  auto out_of_vocab =
      run_process({kCli, "logits", "--model", model, "--ids", "1,9999", "--out", npy});
  CHECK(out_of_vocab.exit_code == 2);
  CHECK(out_of_vocab.err.find("token id 9999") != std::string::npos);
  auto missing =
      run_process({kCli, "logits", "--model", "/nonexistent", "--ids", "1", "--out", npy});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("/nonexistent: model directory does not exist") != std::string::npos);
}

TEST_CASE("cli: generate streams text and reports the finish reason") {
  testing::TempDir dir("cli-gen");
  const std::string model = (dir.path() / "m").string();
  REQUIRE(run_process({kCli, "make-model", "--preset", "tiny", "--out", model}).exit_code == 0);
  auto r = run_process({kCli, "generate", "--model", model, "--prompt", "Hello there",
                        "--max-tokens", "12", "--seed", "1", "--chat"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("finish: ") != std::string::npos);
  CHECK(r.out.size() > 1);
  auto bad = run_process({kCli, "generate", "--model", model, "--prompt", "x", "--top-p", "3"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("top_p must be in (0, 1]") != std::string::npos);
}

TEST_CASE("cli: make-model refuses an existing model directory without --force") {
  testing::TempDir dir("cli-force");
  const std::string model = (dir.path() / "m").string();
  REQUIRE(run_process({kCli, "make-model", "--preset", "tiny", "--out", model, "--shards", "2"})
              .exit_code == 0);
  const auto before = std::filesystem::last_write_time(dir.path() / "m" / "config.json");
  // Before: the second run wrote over the first model.
  auto again = run_process({kCli, "make-model", "--preset", "tiny", "--out", model});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("exists and is not empty; refusing to overwrite it") != std::string::npos);
  CHECK(again.err.find("--force") != std::string::npos);
  CHECK(std::filesystem::last_write_time(dir.path() / "m" / "config.json") == before);
  // --force replaces it whole: no shard of the old one is left behind.
  auto forced = run_process({kCli, "make-model", "--preset", "tiny", "--out", model, "--force"});
  INFO(forced.err);
  REQUIRE(forced.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "m" / "model.safetensors.index.json"));
  CHECK(run_process({kCli, "model-info", "--model", model}).exit_code == 0);
  // Seeds are checked, not wrapped.
  auto negative = run_process({kCli, "make-model", "--preset", "tiny", "--out",
                               (dir.path() / "n").string(), "--seed", "-1"});
  CHECK(negative.exit_code == 2);
}

TEST_CASE("cli: model manifest writes the expert digests, which change the model id") {
  testing::TempDir dir("cli-manifest");
  const std::string model = (dir.path() / "m").string();
  REQUIRE(run_process({kCli, "make-model", "--preset", "tiny", "--out", model}).exit_code == 0);
  REQUIRE(std::filesystem::exists(dir.path() / "m" / "dancemoe-manifest.json"));
  auto with = run_process({kCli, "model-info", "--model", model});
  std::filesystem::remove(dir.path() / "m" / "dancemoe-manifest.json");
  auto without = run_process({kCli, "model-info", "--model", model});
  REQUIRE(with.exit_code == 0);
  REQUIRE(without.exit_code == 0);
  CHECK(with.out != without.out);  // the id covers the manifest
  auto written = run_process({kCli, "model", "manifest", "--model", model});
  INFO(written.err);
  REQUIRE(written.exit_code == 0);
  CHECK(written.out.find("24 experts") != std::string::npos);
  CHECK(run_process({kCli, "model-info", "--model", model}).out == with.out);
}

}  // namespace dancemoe
