// Where the cluster commands (status, nodes, placement, migrations, demo)
// find the scheduler and the keys they talk to it with (docs/security.md),
// so that daily use stays `dancemoe status`.
//
// Each setting comes from the first of:
//   1. the flag                --scheduler, --key, --scheduler-key, --insecure
//   2. the environment         DANCEMOE_SCHEDULER, DANCEMOE_KEY,
//                              DANCEMOE_SCHEDULER_KEY, DANCEMOE_INSECURE=1
//   3. the user's config file  $DANCEMOE_CONFIG, else
//                              $XDG_CONFIG_HOME/dancemoe/cli.toml, else
//                              ~/.config/dancemoe/cli.toml:
//                                scheduler = "tcp://sched.lab:5550"
//                                key = "alice.key"            # relative to the file
//                                scheduler_key = "scheduler.pub"
//                                insecure = false
//   4. the default             tcp://127.0.0.1:5550; no keys
// Then: a key file (the client's NAME.key, an operator's for changes) and
// the scheduler's public key are both needed, unless insecure -- which the
// first source that mentions security at all decides (a --key flag beats
// `insecure = true` in the file). A config file named by $DANCEMOE_CONFIG
// must exist; the default one may be absent.
//
// Pure functions of their inputs and the files they name; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/base/status.h"
#include "common/net/zmq_transport.h"

namespace dancemoe::cli {

// What the flags said (empty / false: not given).
struct ClientFlags {
  std::string scheduler;
  std::string key;
  std::string scheduler_key;
  bool insecure = false;
};

struct ClientSettings {
  std::string scheduler;                   // endpoint
  std::optional<net::CurveOptions> curve;  // nullopt: plain (insecure)
  std::string key_file;                    // for messages
};

// `getenv` is injectable for tests (nullptr result: unset).
using Environment = std::function<const char*(const char*)>;

Result<ClientSettings> resolve_client_settings(const ClientFlags& flags,
                                               const Environment& env = nullptr);

}  // namespace dancemoe::cli
