#include "common/net/key_token.h"

#include <doctest/doctest.h>

namespace dancemoe::net {

TEST_CASE("key token: the server verifies a client's token and learns its public key") {
  REQUIRE(require_curve().is_ok());
  const CurveKeyPair server = *generate_key_pair();
  const CurveKeyPair alice = *generate_key_pair();
  Result<std::string> token = make_key_token(alice, server.public_key);
  REQUIRE(token.is_ok());
  CHECK(token->rfind("dmk1-", 0) == 0);
  CHECK(token->size() == 5 + 64 + 1 + 64);
  // Fixed for the pair of keys.
  CHECK(*make_key_token(alice, server.public_key) == *token);
  // Neither secret is in it.
  CHECK(token->find(alice.secret_key) == std::string::npos);

  Result<std::string> who = verify_key_token(*token, server);
  REQUIRE(who.is_ok());
  CHECK(*who == alice.public_key);
}

TEST_CASE("key token: refused when made for another server, by another key, or altered") {
  const CurveKeyPair server = *generate_key_pair();
  const CurveKeyPair other_server = *generate_key_pair();
  const CurveKeyPair alice = *generate_key_pair();
  const CurveKeyPair mallory = *generate_key_pair();
  const std::string token = *make_key_token(alice, server.public_key);

  // Made for another scheduler.
  CHECK_FALSE(verify_key_token(*make_key_token(alice, other_server.public_key), server).is_ok());
  // Mallory's MAC under Alice's public key: she cannot make Alice's.
  const std::string mallory_token = *make_key_token(mallory, server.public_key);
  const std::string forged = token.substr(0, 5 + 64 + 1) + mallory_token.substr(5 + 64 + 1);
  Result<std::string> refused = verify_key_token(forged, server);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("not made with the secret key") != std::string::npos);
  // Every single hex digit of the MAC matters.
  for (size_t i = 5 + 64 + 1; i < token.size(); i += 7) {
    std::string altered = token;
    altered[i] = altered[i] == '0' ? '1' : '0';
    CHECK_FALSE(verify_key_token(altered, server).is_ok());
  }
  // Malformed.
  for (const std::string& bad :
       {std::string(), std::string("dmk1-"), token.substr(1), token + "0", "x" + token.substr(1),
        token.substr(0, 10) + "zz" + token.substr(12)}) {
    Result<std::string> r = verify_key_token(bad, server);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("key token: keys that are not CURVE keys are an error, not a token") {
  const CurveKeyPair server = *generate_key_pair();
  CurveKeyPair broken = *generate_key_pair();
  broken.secret_key = "short";
  CHECK_FALSE(make_key_token(broken, server.public_key).is_ok());
  CHECK_FALSE(make_key_token(*generate_key_pair(), "not a key").is_ok());
}

}  // namespace dancemoe::net
