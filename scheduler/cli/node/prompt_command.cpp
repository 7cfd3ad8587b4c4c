// `dancemoe prompt "TEXT"`: sends one prompt to a node (the local one by
// default) and streams the answer to stdout as it is generated. The prompt
// goes through the model's chat format as one user turn; --raw sends it as
// a plain completion. Exit codes: 0 answered, 1 the node failed or is
// unreachable, 2 bad usage.
//
//   dancemoe prompt "Why is the sky blue?" [--node http://HOST:8080] [--raw]
//       [--system TEXT] [--max-tokens 256] [--temperature 0.7] [--seed N] [--usage]
#include <cstdio>
#include <memory>

#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/node/node_chat_client.h"

namespace dancemoe::cli {
namespace {

struct PromptOptions {
  NodeChatOptions node;
  std::string text;
  std::string system;
  bool raw = false;
  bool usage = false;
};

void setup(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<PromptOptions>();
  CLI::App* command =
      root.add_subcommand("prompt", "Send a prompt to a node and stream the answer");
  command->add_option("text", o->text, "the prompt")->required();
  command->add_option("--system", o->system, "a system message before the prompt");
  command->add_flag("--raw", o->raw, "a plain completion (no chat format)");
  command->add_flag("--usage", o->usage, "print token counts to stderr at the end");
  add_node_chat_flags(*command, &o->node);
  command->callback([o, exit_code] {
    std::vector<ChatTurn> history;
    if (!o->system.empty()) history.push_back({"system", o->system});
    history.push_back({"user", o->text});
    Result<StreamedAnswer> answer =
        stream_answer(o->node, history, o->raw, [](std::string_view text) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
        });
    if (!answer.is_ok()) {
      std::fprintf(stderr, "\n");
      *exit_code = report_failure("prompt", answer.status());
      return;
    }
    std::printf("\n");
    if (o->usage) {
      std::fprintf(stderr, "[%s; prompt %lld tokens, answer %lld tokens]\n",
                   answer->finish_reason.c_str(), static_cast<long long>(answer->prompt_tokens),
                   static_cast<long long>(answer->completion_tokens));
    }
    *exit_code = 0;
  });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
