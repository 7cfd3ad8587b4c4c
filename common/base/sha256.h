// SHA-256 digests (libsodium), for model ids and weight checksums.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dancemoe {

// Incremental SHA-256. Not thread-safe; one hasher per thread.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const uint8_t> bytes);
  void update(std::string_view text);
  std::array<uint8_t, 32> finish();

 private:
  alignas(64) unsigned char state_[256];
};

std::string to_hex(std::span<const uint8_t> bytes);

}  // namespace dancemoe
