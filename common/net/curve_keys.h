// CurveZMQ keys (docs/security.md): generating them, and reading and writing
// the key files every DanceMoE process is given.
//
// A key is 32 bytes of Curve25519, carried everywhere as its 40-character
// Z85 text (ZeroMQ's encoding), so a key is a plain std::string to the rest
// of the code. Two files per key, NAME.pub and NAME.key, both text:
//
//   # comment lines
//   public-key = "<40 Z85 characters>"
//   secret-key = "<40 Z85 characters>"      (NAME.key only)
//
// NAME.key is written with mode 0600 and refused when it is readable or
// writable by group or others (the error names the file and its mode). A
// directory of admitted keys holds one NAME.pub per member; NAME is the
// key's name (letters, digits, '.', '_', '-').
//
// Pure functions over files; thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace dancemoe::net {

// A key pair in Z85 text.
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
};

// ok when this libzmq was built with CURVE (libsodium); otherwise a
// failed_precondition that says so.
Status require_curve();

// A fresh random key pair.
Result<CurveKeyPair> generate_key_pair();

// True for 40 Z85 characters that decode to 32 bytes.
bool is_z85_key(std::string_view text);

// NAME is usable as a key name (and so as a file name).
Status check_key_name(std::string_view name);

// Writes DIR/NAME.key (0600) and DIR/NAME.pub; refuses to overwrite either.
// Returns the pair written.
Result<CurveKeyPair> write_key_pair(const std::filesystem::path& dir, std::string_view name);

// Reads NAME.key: both keys, the public one checked against the secret one.
Result<CurveKeyPair> read_secret_key_file(const std::filesystem::path& path);

// Reads NAME.pub (a NAME.key is accepted too: its public key is used).
Result<std::string> read_public_key_file(const std::filesystem::path& path);

// Writes DIR/NAME.pub for `public_key` (replacing an older file of that name).
Status write_public_key_file(const std::filesystem::path& dir, std::string_view name,
                             std::string_view public_key);

// Every NAME.pub of a directory: name -> key. Other files are ignored; a
// malformed .pub, or one key under two names, is an error naming the files.
Result<std::map<std::string, std::string>> read_public_key_dir(const std::filesystem::path& dir);

}  // namespace dancemoe::net
