#include "common/net/curve_keys.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/base/file_util.h"
#include "tests/support/paths.h"

namespace dancemoe::net {
namespace {

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("curve keys: generate writes NAME.key 0600 and NAME.pub, and reads them back") {
  REQUIRE(require_curve().is_ok());
  testing::TempDir dir("curve-keys");
  Result<CurveKeyPair> pair = write_key_pair(dir.path(), "ws1");
  REQUIRE(pair.is_ok());
  CHECK(is_z85_key(pair->public_key));
  CHECK(is_z85_key(pair->secret_key));
  CHECK(pair->public_key != pair->secret_key);
  CHECK(mode_of(dir.path() / "ws1.key") == 0600);

  Result<CurveKeyPair> secret = read_secret_key_file(dir.path() / "ws1.key");
  REQUIRE(secret.is_ok());
  CHECK(secret->public_key == pair->public_key);
  CHECK(secret->secret_key == pair->secret_key);
  Result<std::string> pub = read_public_key_file(dir.path() / "ws1.pub");
  REQUIRE(pub.is_ok());
  CHECK(*pub == pair->public_key);
  // The public file holds no secret.
  CHECK(read_file(dir.path() / "ws1.pub")->find(pair->secret_key) == std::string::npos);

  // Never overwrites a key.
  Result<CurveKeyPair> again = write_key_pair(dir.path(), "ws1");
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.status().message().find("already exists") != std::string::npos);
  CHECK(read_secret_key_file(dir.path() / "ws1.key")->secret_key == pair->secret_key);
}

TEST_CASE("curve keys: a secret key file readable by others is refused, naming file and mode") {
  testing::TempDir dir("curve-keys-mode");
  REQUIRE(write_key_pair(dir.path(), "op").is_ok());
  const std::filesystem::path path = dir.path() / "op.key";
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  Result<CurveKeyPair> read = read_secret_key_file(path);
  REQUIRE_FALSE(read.is_ok());
  CHECK(read.status().message().find(path.string()) != std::string::npos);
  CHECK(read.status().message().find("0644") != std::string::npos);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  CHECK_FALSE(read_secret_key_file(path).is_ok());
  REQUIRE(::chmod(path.c_str(), 0400) == 0);
  CHECK(read_secret_key_file(path).is_ok());
}

TEST_CASE("curve keys: malformed files and names are errors naming the file and line") {
  testing::TempDir dir("curve-keys-bad");
  const std::filesystem::path bad = dir.path() / "bad.pub";
  std::ofstream(bad) << "# a comment\npublic-key = \"not a key\"\n";
  Result<std::string> read = read_public_key_file(bad);
  REQUIRE_FALSE(read.is_ok());
  CHECK(read.status().message().find(bad.string() + ":2") != std::string::npos);

  std::ofstream(bad) << "colour = \"blue\"\n";
  CHECK(read_public_key_file(bad).status().message().find("unknown field 'colour'") !=
        std::string::npos);
  CHECK_FALSE(check_key_name("../etc").is_ok());  // lint: path-ok (a traversal attempt)
  CHECK_FALSE(check_key_name("").is_ok());
  CHECK_FALSE(check_key_name(".hidden").is_ok());
  CHECK(check_key_name("ws-1.lab_a").is_ok());

  // A .pub given where a secret key is needed.
  Result<CurveKeyPair> pair = write_key_pair(dir.path(), "n");
  REQUIRE(pair.is_ok());
  REQUIRE(::chmod((dir.path() / "n.pub").c_str(), 0600) == 0);
  CHECK(read_secret_key_file(dir.path() / "n.pub").status().message().find("no secret-key") !=
        std::string::npos);
}

TEST_CASE("curve keys: a key directory maps names to keys and refuses one key under two names") {
  testing::TempDir dir("curve-keys-dir");
  Result<CurveKeyPair> a = write_key_pair(dir.path() / "gen", "a");
  Result<CurveKeyPair> b = write_key_pair(dir.path() / "gen", "b");
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  const std::filesystem::path nodes = dir.path() / "nodes";
  std::filesystem::create_directories(nodes);
  REQUIRE(write_public_key_file(nodes, "a", a->public_key).is_ok());
  REQUIRE(write_public_key_file(nodes, "b", b->public_key).is_ok());
  std::ofstream(nodes / "README") << "not a key\n";
  auto keys = read_public_key_dir(nodes);
  REQUIRE(keys.is_ok());
  CHECK(keys->size() == 2);
  CHECK(keys->at("a") == a->public_key);
  CHECK(keys->at("b") == b->public_key);

  REQUIRE(write_public_key_file(nodes, "a-again", a->public_key).is_ok());
  auto twice = read_public_key_dir(nodes);
  REQUIRE_FALSE(twice.is_ok());
  CHECK(twice.status().message().find("one key must have one name") != std::string::npos);
  CHECK_FALSE(read_public_key_dir(dir.path() / "missing").is_ok());
}

}  // namespace dancemoe::net
