#include "common/net/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/base/file_util.h"
#include "common/base/unique_fd.h"

namespace dancemoe::net {
namespace {

constexpr size_t kZ85KeyChars = 40;
constexpr uint64_t kMaxKeyFileBytes = 4096;

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The `name = "value"` lines of a key file; errors name the file and line.
Result<std::map<std::string, std::string>> parse_key_file(const std::filesystem::path& path) {
  DMOE_ASSIGN_OR_RETURN(const std::string text, read_file(path, kMaxKeyFileBytes));
  std::map<std::string, std::string> fields;
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    const size_t eq = line.find('=');
    const size_t open = line.find('"', eq == std::string::npos ? 0 : eq);
    const size_t close = open == std::string::npos ? open : line.find('"', open + 1);
    if (eq == std::string::npos || open == std::string::npos || close == std::string::npos) {
      return invalid_argument(where + ": expected public-key = \"...\" or secret-key = \"...\"");
    }
    std::string name = line.substr(first, eq - first);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name != "public-key" && name != "secret-key") {
      return invalid_argument(where + ": unknown field '" + name +
                              "' (expected public-key or secret-key)");
    }
    std::string value = line.substr(open + 1, close - open - 1);
    if (!is_z85_key(value)) {
      return invalid_argument(where + ": " + name + " is not a CURVE key (40 Z85 characters)");
    }
    fields[name] = std::move(value);
  }
  return fields;
}

std::string key_file_text(std::string_view name, const CurveKeyPair& pair, bool secret) {
  std::string text;
  if (secret) {
    text += "# DanceMoE CURVE secret key '" + std::string(name) +
            "'. Keep it on this machine only, mode 0600.\n";
    text += "public-key = \"" + pair.public_key + "\"\n";
    text += "secret-key = \"" + pair.secret_key + "\"\n";
  } else {
    text += "# DanceMoE CURVE public key '" + std::string(name) +
            "'. Safe to share: admit it (a key directory, `dancemoe nodes admit`) or pin it.\n";
    text += "public-key = \"" + pair.public_key + "\"\n";
  }
  return text;
}

// Creates `path` exclusively with `mode` and writes `text`.
Status create_file(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd.valid()) {
    if (errno == EEXIST) {
      return failed_precondition(path.string() + ": already exists; not overwriting a key");
    }
    return unavailable(path.string() + ": cannot create (" + std::strerror(errno) + ")");
  }
  // The umask may have removed bits; the mode is part of the contract.
  if (::fchmod(fd.get(), mode) != 0) {
    return unavailable(path.string() + ": cannot set mode (" + std::strerror(errno) + ")");
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return unavailable(path.string() + ": write failed (" + std::strerror(errno) + ")");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) {
    return unavailable(path.string() + ": fsync failed (" + std::strerror(errno) + ")");
  }
  return Status::ok();
}

}  // namespace

Status require_curve() {
  if (zmq_has("curve") == 0) {
    return failed_precondition(
        "this libzmq was built without CURVE security (zmq_has(\"curve\") is false); install a "
        "libzmq with libsodium (Debian's libzmq5 has it) or run with --insecure");
  }
  return Status::ok();
}

Result<CurveKeyPair> generate_key_pair() {
  DMOE_RETURN_IF_ERROR(require_curve());
  std::array<char, kZ85KeyChars + 1> public_key{};
  std::array<char, kZ85KeyChars + 1> secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    return internal_error(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{public_key.data(), secret_key.data()};
}

bool is_z85_key(std::string_view text) {
  if (text.size() != kZ85KeyChars) return false;
  const std::string copy(text);
  std::array<uint8_t, 32> bytes{};
  return zmq_z85_decode(bytes.data(), copy.c_str()) != nullptr;
}

Status check_key_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 && name[0] != '.' && name[0] != '-';
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-');
  }
  if (!ok) {
    return invalid_argument("key name '" + std::string(name) +
                            "': expected 1 to 64 letters, digits, '.', '_' or '-' (not "
                            "starting with '.' or '-')");
  }
  return Status::ok();
}

Result<CurveKeyPair> write_key_pair(const std::filesystem::path& dir, std::string_view name) {
  DMOE_RETURN_IF_ERROR(check_key_name(name));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return unavailable(dir.string() + ": cannot create the directory (" + ec.message() + ")");
  const std::filesystem::path secret = dir / (std::string(name) + ".key");
  const std::filesystem::path pub = dir / (std::string(name) + ".pub");
  for (const std::filesystem::path& p : {secret, pub}) {
    if (std::filesystem::exists(p, ec)) {
      return failed_precondition(p.string() + ": already exists; not overwriting a key");
    }
  }
  DMOE_ASSIGN_OR_RETURN(CurveKeyPair pair, generate_key_pair());
  DMOE_RETURN_IF_ERROR(create_file(secret, key_file_text(name, pair, true), 0600));
  DMOE_RETURN_IF_ERROR(create_file(pub, key_file_text(name, pair, false), 0644));
  return pair;
}

Result<CurveKeyPair> read_secret_key_file(const std::filesystem::path& path) {
  DMOE_RETURN_IF_ERROR(require_curve());
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return not_found(path.string() + ": cannot read the secret key file (" + std::strerror(errno) +
                     ")");
  }
  if ((st.st_mode & 0077) != 0) {
    return failed_precondition(
        path.string() + ": secret key file has mode " + mode_text(st.st_mode) +
        ", readable or writable by group or others; run chmod 600 " + path.string());
  }
  DMOE_ASSIGN_OR_RETURN(const auto fields, parse_key_file(path));
  const auto secret = fields.find("secret-key");
  if (secret == fields.end()) {
    return invalid_argument(path.string() + ": no secret-key (is this a .pub file? pass NAME.key)");
  }
  std::array<char, kZ85KeyChars + 1> derived{};
  if (zmq_curve_public(derived.data(), secret->second.c_str()) != 0) {
    return invalid_argument(path.string() + ": secret-key is not a CURVE secret key");
  }
  const auto pub = fields.find("public-key");
  if (pub != fields.end() && pub->second != derived.data()) {
    return invalid_argument(path.string() +
                            ": public-key does not belong to secret-key (the file was edited)");
  }
  return CurveKeyPair{derived.data(), secret->second};
}

Result<std::string> read_public_key_file(const std::filesystem::path& path) {
  DMOE_ASSIGN_OR_RETURN(const auto fields, parse_key_file(path));
  const auto pub = fields.find("public-key");
  if (pub == fields.end()) return invalid_argument(path.string() + ": no public-key");
  return pub->second;
}

Status write_public_key_file(const std::filesystem::path& dir, std::string_view name,
                             std::string_view public_key) {
  DMOE_RETURN_IF_ERROR(check_key_name(name));
  if (!is_z85_key(public_key)) {
    return invalid_argument("public key of '" + std::string(name) +
                            "': expected 40 Z85 characters");
  }
  const std::filesystem::path path = dir / (std::string(name) + ".pub");
  const std::filesystem::path temporary = dir / ("." + std::string(name) + ".pub.tmp");
  std::error_code ec;
  std::filesystem::remove(temporary, ec);
  CurveKeyPair pair{std::string(public_key), {}};
  DMOE_RETURN_IF_ERROR(create_file(temporary, key_file_text(name, pair, false), 0644));
  std::filesystem::rename(temporary, path, ec);
  if (ec) return unavailable(path.string() + ": cannot write (" + ec.message() + ")");
  return Status::ok();
}

Result<std::map<std::string, std::string>> read_public_key_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return not_found(dir.string() + ": not a directory of public keys (NAME.pub files)");
  }
  std::map<std::string, std::string> keys;
  std::map<std::string, std::string> name_of_key;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() != ".pub" || !entry.is_regular_file(ec)) continue;
    const std::string name = p.stem().string();
    if (name.empty() || name[0] == '.') continue;
    DMOE_RETURN_IF_ERROR(check_key_name(name).with_context(p.string()));
    DMOE_ASSIGN_OR_RETURN(std::string key, read_public_key_file(p));
    const auto [other, fresh] = name_of_key.emplace(key, name);
    if (!fresh) {
      return invalid_argument(p.string() + ": the same key as " +
                              (dir / (other->second + ".pub")).string() +
                              "; one key must have one name");
    }
    keys[name] = std::move(key);
  }
  if (ec) return unavailable(dir.string() + ": cannot list (" + ec.message() + ")");
  return keys;
}

}  // namespace dancemoe::net
