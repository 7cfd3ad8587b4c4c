#include "common/generation/token_constraint.h"

#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "common/generation/json_schema_grammar.h"
#include "common/tokenizer/synthetic_tokenizer.h"

namespace dancemoe {
namespace {

struct Vocab {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const TokenVocabulary> vocabulary;
  int32_t eos = 0;

  Vocab() {
    auto files = tokenizer::make_synthetic_tokenizer(2048);
    REQUIRE(files.is_ok());
    auto loaded = tokenizer::Tokenizer::from_json_text(files->tokenizer_json,
                                                       files->tokenizer_config_json, "synthetic");
    REQUIRE(loaded.is_ok());
    tok = std::move(*loaded);
    vocabulary = TokenVocabulary::build(*tok, 2048);
    eos = *tok->eos_id();
  }

  // The id of the token that is exactly this one byte.
  int32_t id(char c) const {
    for (size_t i = 0; i < vocabulary->bytes.size(); ++i) {
      if (vocabulary->bytes[i] == std::string(1, c)) return static_cast<int32_t>(i);
    }
    FAIL("no token for the byte " << int(c));
    return -1;
  }

  std::unique_ptr<TokenConstraint> constraint(const std::string& schema) {
    auto grammar = json_schema_grammar(nlohmann::ordered_json::parse(schema));
    REQUIRE(grammar.is_ok());
    auto c =
        TokenConstraint::create(std::make_shared<Grammar>(std::move(*grammar)), vocabulary, {eos});
    REQUIRE(c.is_ok());
    return std::move(*c);
  }
};

}  // namespace

TEST_CASE("token vocabulary: byte-level tokens keep their raw bytes, special tokens have none") {
  Vocab v;
  CHECK(v.vocabulary->bytes[static_cast<size_t>(v.id('a'))] == "a");
  CHECK(v.vocabulary->bytes[static_cast<size_t>(v.eos)].empty());
  // A multi-byte character is split over byte tokens: each holds one raw byte.
  auto ids = v.tok->encode("\xc3\xa9", false);
  REQUIRE(ids.is_ok());
  std::string joined;
  for (int32_t id : *ids) joined += v.vocabulary->bytes[static_cast<size_t>(id)];
  CHECK(joined == "\xc3\xa9");
  for (size_t i = 1; i < v.vocabulary->sorted_ids.size(); ++i) {
    CHECK(v.vocabulary->bytes[static_cast<size_t>(v.vocabulary->sorted_ids[i - 1])] <=
          v.vocabulary->bytes[static_cast<size_t>(v.vocabulary->sorted_ids[i])]);
  }
}

TEST_CASE("token constraint: the mask agrees with allows() for every token, EOS only at the end") {
  Vocab v;
  auto c = v.constraint(R"({"type": "object", "properties": {"n": {"type": "integer"}},
                           "required": ["n"]})");
  auto check_mask_matches = [&] {
    std::vector<float> logits(2048, 0.0f);
    REQUIRE(c->mask(logits));
    for (int32_t id = 0; id < 2048; ++id) {
      CHECK_MESSAGE(c->allows(id) == std::isfinite(logits[static_cast<size_t>(id)]), id);
    }
  };
  check_mask_matches();
  CHECK(c->allows(v.id('{')));
  CHECK_FALSE(c->allows(v.id('[')));
  CHECK_FALSE(c->allows(v.eos));
  for (char ch : std::string(R"({"n":4)")) c->accept(v.id(ch));
  check_mask_matches();
  CHECK(c->allows(v.id('2')));
  CHECK_FALSE(c->complete());
  c->accept(v.id('}'));
  CHECK(c->complete());
  CHECK(c->finished());
  CHECK(c->allows(v.eos));
  CHECK_FALSE(c->allows(v.id(' ')));
}

TEST_CASE("token constraint: random walks over allowed tokens always end in matching JSON") {
  Vocab v;
  std::mt19937 rng(11);
  for (int walk = 0; walk < 20; ++walk) {
    auto c = v.constraint(R"({"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 5},
        "xs": {"type": "array", "items": {"type": "number"}, "maxItems": 3}},
        "required": ["s", "xs"], "additionalProperties": false})");
    std::vector<int32_t> ids;
    for (int step = 0; step < 400 && !c->finished(); ++step) {
      std::vector<float> logits(2048);
      for (float& l : logits) l = std::uniform_real_distribution<float>(-1, 1)(rng);
      REQUIRE(c->mask(logits));
      // Prefer closing tokens now and then so that walks end.
      int32_t best = -1;
      for (int32_t id = 0; id < 2048; ++id) {
        if (std::isfinite(logits[static_cast<size_t>(id)]) &&
            (best < 0 || logits[static_cast<size_t>(id)] > logits[static_cast<size_t>(best)])) {
          best = id;
        }
      }
      if (step > 40 && c->allows(v.id('"'))) best = v.id('"');
      if (step > 60 && c->allows(v.id(']'))) best = v.id(']');
      if (step > 80 && c->allows(v.id('}'))) best = v.id('}');
      REQUIRE(c->allows(best));
      c->accept(best);
      ids.push_back(best);
    }
    REQUIRE(c->finished());
    const std::string text = v.tok->decode(ids, true);
    INFO(text);
    const auto value = nlohmann::json::parse(text, nullptr, false);
    REQUIRE_FALSE(value.is_discarded());
    CHECK(value["xs"].size() <= 3);
  }
}

}  // namespace dancemoe
