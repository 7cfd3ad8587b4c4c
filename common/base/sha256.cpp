#include "common/base/sha256.h"

#include <sodium.h>

#include "common/base/check.h"

namespace dancemoe {

static_assert(sizeof(crypto_hash_sha256_state) <= 256, "state buffer too small");

Sha256::Sha256() {
  DMOE_CHECK(sodium_init() >= 0);
  crypto_hash_sha256_init(reinterpret_cast<crypto_hash_sha256_state*>(state_));
}

Sha256::~Sha256() = default;

void Sha256::update(std::span<const uint8_t> bytes) {
  crypto_hash_sha256_update(reinterpret_cast<crypto_hash_sha256_state*>(state_), bytes.data(),
                            bytes.size());
}

void Sha256::update(std::string_view text) {
  update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> digest{};
  crypto_hash_sha256_final(reinterpret_cast<crypto_hash_sha256_state*>(state_), digest.data());
  return digest;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace dancemoe
