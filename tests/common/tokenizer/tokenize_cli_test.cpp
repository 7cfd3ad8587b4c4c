// `dancemoe tokenize`: one JSON array of ids per JSON-string line, exit 2
// with the line number on a bad line. Runs the real binary.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

struct CommandResult {
  int exit_code;
  std::string out;  // stdout and stderr
};

CommandResult run_cli(const std::string& args) {
  const std::string command = std::string("'") + DMOE_CLI_PATH + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST_CASE("tokenize command: prints one JSON id array per JSON-string line") {
  dancemoe::testing::TempDir dir("tokenize-cli");
  REQUIRE(write_synthetic_tokenizer(dir.path(), 1024).is_ok());
  const std::filesystem::path lines = dir.path() / "lines.txt";
  std::ofstream(lines) << "\"Hello world\"\n\"tab\\there\\nnewline\"\n\"\"\n"
                       << "\"<|im_start|>x\"\r\n";
  const CommandResult result =
      run_cli("tokenize --tokenizer '" + (dir.path() / "tokenizer.json").string() + "' --lines '" +
              lines.string() + "'");
  REQUIRE_MESSAGE(result.exit_code == 0, result.out);
  const Tokenizer& tok = testing::synthetic();  // same vocab_size, same files
  std::string expected;
  for (const char* text : {"Hello world", "tab\there\nnewline", "", "<|im_start|>x"}) {
    expected += nlohmann::json(testing::encode_or_fail(tok, text)).dump() + "\n";
  }
  CHECK(result.out == expected);
}

TEST_CASE("tokenize command: a line that is not a JSON string is an error naming the line") {
  dancemoe::testing::TempDir dir("tokenize-cli-bad");
  REQUIRE(write_synthetic_tokenizer(dir.path(), 300).is_ok());
  const std::filesystem::path lines = dir.path() / "lines.txt";
  std::ofstream(lines) << "\"fine\"\n\"also fine\"\nnot json\n\"never reached\"\n";
  const std::string tokenizer_arg =
      "--tokenizer '" + (dir.path() / "tokenizer.json").string() + "'";
  const CommandResult bad =
      run_cli("tokenize " + tokenizer_arg + " --lines '" + lines.string() + "'");
  CHECK(bad.exit_code == 2);
  CHECK_MESSAGE(
      bad.out.find(lines.string() + ":3: expected one JSON string literal") != std::string::npos,
      bad.out);
  CHECK(bad.out.find("[") == std::string::npos);  // nothing printed before the error

  std::ofstream(lines) << "[1, 2]\n";
  CHECK(run_cli("tokenize " + tokenizer_arg + " --lines '" + lines.string() + "'").exit_code == 2);
  const CommandResult missing =
      run_cli("tokenize --tokenizer /nonexistent/tokenizer.json --lines '" + lines.string() + "'");
  CHECK(missing.exit_code == 2);
  CHECK(missing.out.find("/nonexistent/tokenizer.json: cannot open file") != std::string::npos);
}

}  // namespace dancemoe::tokenizer
