// `dancemoe chat`: an interactive chat with a node, keeping the history of
// the conversation (every turn is sent again, as chat APIs expect). Reads
// one user message per line; works with stdin not a terminal (piped lines
// are a scripted conversation, no prompt is shown). Commands: /reset clears
// the history, /quit (or end of input) leaves.
//
//   dancemoe chat [--node http://HOST:8080] [--system TEXT] [--max-tokens 256]
//       [--temperature 0.7] [--seed N]
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/node/node_chat_client.h"

namespace dancemoe::cli {
namespace {

struct ChatOptions {
  NodeChatOptions node;
  std::string system;
};

int run_chat(const ChatOptions& o) {
  const bool interactive = ::isatty(STDIN_FILENO) != 0;
  std::vector<ChatTurn> history;
  if (!o.system.empty()) history.push_back({"system", o.system});
  if (interactive) {
    std::printf("chatting with %s -- /reset clears the history, /quit leaves\n",
                o.node.node_url.c_str());
  }
  std::string line;
  while (true) {
    if (interactive) {
      std::printf("> ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/reset") {
      history.resize(o.system.empty() ? 0 : 1);
      continue;
    }
    history.push_back({"user", line});
    Result<StreamedAnswer> answer =
        stream_answer(o.node, history, /*raw=*/false, [](std::string_view text) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
        });
    std::printf("\n");
    if (!answer.is_ok()) {
      std::fprintf(stderr, "dancemoe chat: %s\n", answer.status().message().c_str());
      history.pop_back();  // the turn was not answered
      if (!interactive) return 1;
      continue;
    }
    history.push_back({"assistant", answer->text});
  }
  if (interactive) std::printf("\n");
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* command = root.add_subcommand("chat", "Chat with a node (keeps the history)");
  command->add_option("--system", o->system, "a system message starting the conversation");
  add_node_chat_flags(*command, &o->node);
  command->callback([o, exit_code] { *exit_code = run_chat(*o); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
