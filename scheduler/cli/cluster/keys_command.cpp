// `dancemoe keys generate`: a CURVE key pair for a scheduler, a node or an
// operator (docs/security.md).
//
//   dancemoe keys generate --out DIR --name NAME
//       Writes DIR/NAME.key (the secret, mode 0600: keep it on the machine
//       that uses it) and DIR/NAME.pub (give it out: to the scheduler's
//       --nodes-keys or --operator-keys directory, or with `dancemoe nodes
//       admit`; the scheduler's .pub to every node and client). Never
//       overwrites a key. Prints the public key.
#include <cstdio>
#include <string>

#include "common/net/curve_keys.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

struct Options {
  std::string out;
  std::string name;
};

int run_generate(const Options& o) {
  Result<net::CurveKeyPair> pair = net::write_key_pair(o.out, o.name);
  if (!pair.is_ok()) {
    const Status& s = pair.status();
    return report_failure("keys generate",
                          s.code() == StatusCode::kFailedPrecondition
                              ? invalid_argument(s.message())  // exists: bad input, exit 2
                              : s);
  }
  std::printf("wrote %s/%s.key (secret, mode 0600) and %s/%s.pub\npublic key: %s\n", o.out.c_str(),
              o.name.c_str(), o.out.c_str(), o.name.c_str(), pair->public_key.c_str());
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  CLI::App* keys = root.add_subcommand("keys", "CURVE keys for schedulers, nodes and operators");
  keys->require_subcommand(1);
  auto o = std::make_shared<Options>();
  CLI::App* generate = keys->add_subcommand(
      "generate", "Write NAME.key (secret, mode 0600) and NAME.pub into a directory");
  generate->add_option("--out", o->out, "directory (created if missing)")->required();
  generate->add_option("--name", o->name, "key name: letters, digits, '.', '_', '-'")->required();
  generate->callback([o, exit_code] { *exit_code = run_generate(*o); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
