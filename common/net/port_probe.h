// Whether a TCP port can be bound on this host now -- checked before a
// process loads anything slow (a node's weights), and by `dancemoe doctor`.
// Binds a plain socket with SO_REUSEADDR (as ZeroMQ and the HTTP server do)
// and closes it at once. Thread-safe.
#pragma once

#include <string>

#include "common/base/status.h"

namespace dancemoe::net {

// `what` names the flag in messages ("--http"). `host` is an address or
// "*" / "0.0.0.0" (any); port 0 is always free. unavailable naming the
// flag, the address and the reason (in use, not an address of this host).
Status check_tcp_port_free(const std::string& what, const std::string& host, int port);

}  // namespace dancemoe::net
