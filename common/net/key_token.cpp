#include "common/net/key_token.h"

#include <sodium.h>
#include <zmq.h>

#include <array>
#include <cstdint>

#include "common/base/check.h"

namespace dancemoe::net {

namespace {

using Bytes32 = std::array<uint8_t, 32>;

constexpr std::string_view kPrefix = "dmk1-";
constexpr std::string_view kContext = "dancemoe http key token v1";
constexpr size_t kTokenChars = kPrefix.size() + 64 + 1 + 64;

Result<Bytes32> decode_key(std::string_view z85, const char* what) {
  Bytes32 bytes{};
  const std::string text(z85);
  if (!is_z85_key(text) || zmq_z85_decode(bytes.data(), text.c_str()) == nullptr) {
    return invalid_argument(std::string(what) + " is not a CURVE key (40 Z85 characters)");
  }
  return bytes;
}

std::string z85(const Bytes32& bytes) {
  std::array<char, 41> text{};
  zmq_z85_encode(text.data(), bytes.data(), bytes.size());
  return std::string(text.data());
}

std::string hex(const Bytes32& bytes) {
  std::array<char, 65> text{};
  sodium_bin2hex(text.data(), text.size(), bytes.data(), bytes.size());
  return std::string(text.data());
}

bool from_hex(std::string_view text, Bytes32* out) {
  if (text.size() != 64) return false;
  size_t used = 0;
  return sodium_hex2bin(out->data(), out->size(), text.data(), text.size(), nullptr, &used,
                        nullptr) == 0 &&
         used == out->size();
}

// The MAC for the pair; false when the X25519 result is degenerate (a
// low-order public key, which no real key is).
bool mac(const Bytes32& own_secret, const Bytes32& other_public, const Bytes32& client_public,
         const Bytes32& server_public, Bytes32* out) {
  DMOE_CHECK(sodium_init() >= 0);
  Bytes32 shared{};
  if (crypto_scalarmult(shared.data(), own_secret.data(), other_public.data()) != 0) return false;
  crypto_generichash_state state;
  crypto_generichash_init(&state, shared.data(), shared.size(), out->size());
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(kContext.data()),
                            kContext.size());
  crypto_generichash_update(&state, client_public.data(), client_public.size());
  crypto_generichash_update(&state, server_public.data(), server_public.size());
  crypto_generichash_final(&state, out->data(), out->size());
  sodium_memzero(shared.data(), shared.size());
  return true;
}

}  // namespace

Result<std::string> make_key_token(const CurveKeyPair& client, std::string_view server_public) {
  DMOE_ASSIGN_OR_RETURN(Bytes32 secret, decode_key(client.secret_key, "the client's secret key"));
  DMOE_ASSIGN_OR_RETURN(const Bytes32 own,
                        decode_key(client.public_key, "the client's public key"));
  DMOE_ASSIGN_OR_RETURN(const Bytes32 server, decode_key(server_public, "the server's public key"));
  Bytes32 m{};
  const bool made = mac(secret, server, own, server, &m);
  sodium_memzero(secret.data(), secret.size());
  if (!made) return invalid_argument("the server's public key is not a usable Curve25519 key");
  return std::string(kPrefix) + hex(own) + "-" + hex(m);
}

Result<std::string> verify_key_token(std::string_view token, const CurveKeyPair& server) {
  if (token.size() != kTokenChars || token.substr(0, kPrefix.size()) != kPrefix ||
      token[kPrefix.size() + 64] != '-') {
    return invalid_argument(
        "not a key token (expected dmk1-<64 hex>-<64 hex>, as `dancemoe keys "
        "http-token` prints)");
  }
  Bytes32 client{};
  Bytes32 presented{};
  if (!from_hex(token.substr(kPrefix.size(), 64), &client) ||
      !from_hex(token.substr(kPrefix.size() + 65), &presented)) {
    return invalid_argument("not a key token (its two parts must be 64 hex digits each)");
  }
  DMOE_ASSIGN_OR_RETURN(Bytes32 secret, decode_key(server.secret_key, "the server's secret key"));
  DMOE_ASSIGN_OR_RETURN(const Bytes32 own,
                        decode_key(server.public_key, "the server's public key"));
  Bytes32 expected{};
  const bool made = mac(secret, client, client, own, &expected);
  sodium_memzero(secret.data(), secret.size());
  if (!made || sodium_memcmp(expected.data(), presented.data(), expected.size()) != 0) {
    return invalid_argument("the token was not made with the secret key of " + z85(client) +
                            " for this server (made for another scheduler, or altered?)");
  }
  return z85(client);
}

}  // namespace dancemoe::net
