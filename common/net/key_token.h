// Key tokens: a bearer token for a channel that is not CurveZMQ (the
// scheduler's HTTP endpoint, docs/web.md) that proves its holder has the
// secret half of a CURVE key the server already knows -- so HTTP has the
// same members and operators as the control port, and the server stores
// nothing new.
//
//   token = "dmk1-" hex(client public key) "-" hex(MAC)
//   MAC   = BLAKE2b-256, keyed with X25519(client secret, server public),
//           of "dancemoe http key token v1" | client public | server public
//
// The client computes the X25519 secret from its secret key and the
// server's public key; the server computes the same secret from its own
// secret key and the client's public key (Diffie-Hellman), so only the two
// holders of those secret keys can make or check a token. A token is fixed
// for a pair of keys: it is a password for that key's HTTP rights, revoked
// with the key (the server asks its allowlist who the key is, per request),
// renewed by rotating the key. Hex, so that it survives URLs and shells.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/net/curve_keys.h"

namespace dancemoe::net {

// The token of `client` for the server whose public key is `server_public`
// (Z85). invalid_argument when a key is not a CURVE key.
Result<std::string> make_key_token(const CurveKeyPair& client, std::string_view server_public);

// The client's public key (Z85) when `token` was made for `server`; else
// invalid_argument saying what is wrong (malformed, or not made by the
// holder of that key for this server). Time does not depend on where a MAC
// differs.
Result<std::string> verify_key_token(std::string_view token, const CurveKeyPair& server);

}  // namespace dancemoe::net
