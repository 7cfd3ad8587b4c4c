// Constrained decoding cost (response_format json_schema) on a real
// vocabulary: Qwen3's 151k tokens. Prints the one-off costs (the
// vocabulary's byte table, the schema's grammar) and, stepping through a
// matching answer token by token, the cost of a full mask of allowed tokens
// per step (what the generator pays when the sampled token is refused) and
// of one allows() check (what it pays otherwise), with the matcher's table
// size (its memory bound). Run in a Release build from the repository root:
//
//   build/release/tests/bench_constrained_decoding [TOKENIZER_JSON]
//
// TOKENIZER_JSON defaults to the npm fixture of deploy/install-deps.sh.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/generation/json_schema_grammar.h"
#include "common/generation/token_constraint.h"
#include "common/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace dancemoe;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path path =
      argc > 1 ? argv[1] : "tests/fixtures/npm/tokenizer-qwen3/models/tokenizer.json";
  auto loaded = tokenizer::Tokenizer::load(path);
  if (!loaded.is_ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().to_string().c_str());
    return 1;
  }
  const tokenizer::Tokenizer& tok = **loaded;
  auto t0 = Clock::now();
  const auto vocabulary = TokenVocabulary::build(tok, tok.vocab_size());
  const double vocab_ms = ms_since(t0);

  const auto schema = nlohmann::ordered_json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 40},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "email": {"type": "string"},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
      "address": {"type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "zip": {"type": "string", "minLength": 5, "maxLength": 5}},
        "required": ["street", "city", "zip"]},
      "score": {"type": "number"},
      "active": {"type": "boolean"}
    },
    "required": ["name", "age", "email", "tags", "address", "score", "active"]
  })");
  t0 = Clock::now();
  auto grammar = json_schema_grammar(schema);
  const double grammar_ms = ms_since(t0);
  if (!grammar.is_ok()) {
    std::fprintf(stderr, "%s\n", grammar.status().to_string().c_str());
    return 1;
  }
  const std::string answer =
      R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "tags": ["math", )"
      R"("poetry", "engines"], "address": {"street": "12 St James's Square", "city": "London", )"
      R"("zip": "SW1Y4"}, "score": 99.5, "active": true})";
  auto ids = tok.encode(answer, false);
  if (!ids.is_ok()) return 1;
  const auto eos = tok.token_id("<|im_end|>");
  auto made = TokenConstraint::create(std::make_shared<Grammar>(std::move(*grammar)), vocabulary,
                                      {eos.value_or(0)});
  if (!made.is_ok()) return 1;
  TokenConstraint& c = **made;
  std::vector<float> logits(static_cast<size_t>(tok.vocab_size()));
  std::vector<double> mask_ms;
  std::vector<double> allows_us;
  size_t allowed_total = 0;
  for (int32_t id : *ids) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    t0 = Clock::now();
    if (!c.mask(logits)) {
      std::fprintf(stderr, "no token allowed before id %d\n", id);
      return 1;
    }
    mask_ms.push_back(ms_since(t0));
    allowed_total += static_cast<size_t>(
        std::count_if(logits.begin(), logits.end(), [](float l) { return std::isfinite(l); }));
    t0 = Clock::now();
    const bool ok = c.allows(id);
    allows_us.push_back(ms_since(t0) * 1e3);
    if (!ok) {
      std::fprintf(stderr, "the answer's token %d is refused\n", id);
      return 1;
    }
    c.accept(id);
  }
  std::printf("vocabulary: %d ids, byte table built in %.1f ms\n", tok.vocab_size(), vocab_ms);
  std::printf("schema grammar: %.2f ms\n", grammar_ms);
  std::printf("answer: %zu tokens, complete: %s\n", ids->size(), c.finished() ? "yes" : "no");
  std::printf(
      "full mask per step: median %.2f ms, p90 %.2f ms, max %.2f ms (%.0f tokens allowed "
      "on average)\n",
      percentile(mask_ms, 0.5), percentile(mask_ms, 0.9), percentile(mask_ms, 1.0),
      static_cast<double>(allowed_total) / static_cast<double>(ids->size()));
  std::printf("allows() per step: median %.1f us, max %.1f us\n", percentile(allows_us, 0.5),
              percentile(allows_us, 1.0));
  return 0;
}
