// `dancemoe keys generate`: a CURVE key pair for a scheduler, a node or an
// operator (docs/security.md).
//
//   dancemoe keys generate --out DIR --name NAME
//       Writes DIR/NAME.key (the secret, mode 0600: keep it on the machine
//       that uses it) and DIR/NAME.pub (give it out: to the scheduler's
//       --nodes-keys or --operator-keys directory, or with `dancemoe nodes
//       admit`; the scheduler's .pub to every node and client). Never
//       overwrites a key. Prints the public key.
//
//   dancemoe keys http-token [--key FILE] [--scheduler-key FILE.pub] [--url URL]
//       Prints the bearer token with which the holder of that key reads
//       (a member's key) or also acts (an operator's) on the scheduler's
//       HTTP endpoint (docs/web.md): common/net/key_token.h, made for the
//       scheduler's public key. The keys come as for the cluster commands
//       (flags, DANCEMOE_KEY / DANCEMOE_SCHEDULER_KEY, cli.toml). With
//       --url, also the dashboard's address that hands the token to the
//       page (URL/#token=TOKEN; the fragment never leaves the browser).
#include <cstdio>
#include <string>

#include "common/net/curve_keys.h"
#include "common/net/key_token.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/cluster/client_settings.h"
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

struct TokenOptions {
  ClientFlags client;
  std::string url;
};

int run_http_token(const TokenOptions& o) {
  Result<ClientSettings> settings = resolve_client_settings(o.client);
  if (!settings.is_ok()) return report_failure("keys http-token", settings.status());
  if (!settings->curve) {
    return report_failure("keys http-token",
                          invalid_argument("an --insecure scheduler has no keys to make a token "
                                           "from: give --key and --scheduler-key (or use its "
                                           "--http-token)"));
  }
  Result<std::string> token =
      net::make_key_token(settings->curve->own, settings->curve->server_key);
  if (!token.is_ok()) return report_failure("keys http-token", token.status());
  if (o.url.empty()) {
    std::printf("%s\n", token->c_str());
  } else {
    std::string base = o.url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    std::printf("%s\n%s/#token=%s\n", token->c_str(), base.c_str(), token->c_str());
  }
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

  auto t = std::make_shared<TokenOptions>();
  CLI::App* token = keys->add_subcommand(
      "http-token", "Print the bearer token of a key for the scheduler's HTTP endpoint");
  token->add_option("--key", t->client.key,
                    "your secret key file, NAME.key (a member's reads, an operator's also acts)");
  token->add_option("--scheduler-key", t->client.scheduler_key, "the scheduler's public key file");
  token->add_option("--url", t->url, "the dashboard's URL: also print it with the token");
  token->callback([t, exit_code] { *exit_code = run_http_token(*t); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
