// `dancemoe tokenize --tokenizer tokenizer.json --lines FILE`
//
// Each line of FILE is one JSON string literal (so tabs, newlines and any
// Unicode are representable); for each line, prints one JSON array of the
// token ids of that string, without special tokens (add_special_tokens =
// false), one array per line, in order. Other tools depend on this exact
// interface.
//
// Exit codes: 0 ok; 2 bad usage or input: a tokenizer that cannot be loaded,
// an unreadable FILE, or a line that is not a JSON string literal (an empty
// line included; write "" for the empty string): the error names the line
// number and nothing is printed to stdout; 1 if encoding fails at run time.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/base/json_nesting.h"
#include "common/tokenizer/tokenizer.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer_path;
  std::string lines_path;
};

int run_tokenize(const TokenizeOptions& options) {
  Result<std::unique_ptr<tokenizer::Tokenizer>> loaded =
      tokenizer::Tokenizer::load(options.tokenizer_path);
  if (!loaded.is_ok()) {
    std::fprintf(stderr, "dancemoe tokenize: %s\n", loaded.status().message().c_str());
    return 2;
  }
  const tokenizer::Tokenizer& tok = **loaded;

  std::ifstream in(options.lines_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "dancemoe tokenize: %s: cannot open file\n", options.lines_path.c_str());
    return 2;
  }
  // All lines are encoded before anything is printed, so a bad line never
  // leaves a partial result on stdout.
  std::string output;
  std::string line;
  size_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    const bool shallow = check_json_nesting(line, "line").is_ok();
    const nlohmann::json value =
        shallow ? nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false) : nullptr;
    if (!value.is_string()) {
      std::fprintf(stderr,
                   "dancemoe tokenize: %s:%zu: expected one JSON string literal per line, "
                   "e.g. \"Hello\\tworld\\n\"\n",
                   options.lines_path.c_str(), line_number);
      return 2;
    }
    Result<std::vector<int32_t>> ids =
        tok.encode(value.get_ref<const std::string&>(), /*add_special_tokens=*/false);
    if (!ids.is_ok()) {
      std::fprintf(stderr, "dancemoe tokenize: %s:%zu: %s\n", options.lines_path.c_str(),
                   line_number, ids.status().message().c_str());
      return 1;
    }
    output += '[';
    for (size_t i = 0; i < ids->size(); ++i) {
      if (i > 0) output += ',';
      output += std::to_string((*ids)[i]);
    }
    output += "]\n";
  }
  if (in.bad()) {
    std::fprintf(stderr, "dancemoe tokenize: %s: read error\n", options.lines_path.c_str());
    return 2;
  }
  std::fwrite(output.data(), 1, output.size(), stdout);
  return 0;
}

void setup_tokenize(CLI::App& root, int* exit_code) {
  CLI::App* command = root.add_subcommand(
      "tokenize",
      "Print the token ids of strings: each line of --lines is a JSON string literal, each output "
      "line the JSON array of its ids (no special tokens added).");
  auto options = std::make_shared<TokenizeOptions>();
  command
      ->add_option("--tokenizer", options->tokenizer_path,
                   "tokenizer.json (tokenizer_config.json beside it is read too)")
      ->required();
  command->add_option("--lines", options->lines_path, "file with one JSON string per line")
      ->required();
  command->callback([options, exit_code]() { *exit_code = run_tokenize(*options); });
}

}  // namespace

DMOE_REGISTER_CLI_COMMAND(setup_tokenize);

}  // namespace dancemoe::cli
