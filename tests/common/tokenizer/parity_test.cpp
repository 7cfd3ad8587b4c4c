// Parity with HuggingFace tokenizers on real tokenizers: every string of
// tests/fixtures/tokenizer/corpus.jsonl must give exactly the ids, the ids
// with special tokens and the decoded text that @lenml/tokenizers (a JS port
// of HF tokenizers) gave, as recorded by make_expected.mjs. Skips visibly
// when the npm fixtures (deploy/install-deps.sh) are absent.
#include <doctest/doctest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/base/json_field.h"
#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

using testing::tokenizer_fixture_dir;

struct Expected {
  std::vector<int32_t> ids;
  std::vector<int32_t> ids_special;
  std::string decoded;
};

std::vector<Expected> read_expected(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::vector<Expected> expected;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line);
    expected.push_back({j.at("ids").get<std::vector<int32_t>>(),
                        j.at("ids_special").get<std::vector<int32_t>>(),
                        j.at("decoded").get<std::string>()});
  }
  return expected;
}

std::string shorten(const std::string& text) {
  const std::string quoted = json_quote(text);
  return quoted.size() <= 120 ? quoted : quoted.substr(0, 117) + "...";
}

// "at index 3: expected 1879 (\"Ġworld\"), got 1917 (\"Ġwor\")" and the
// lengths, so that a mismatch can be read without a debugger.
std::string describe_mismatch(const Tokenizer& tok, const std::vector<int32_t>& expected,
                              const std::vector<int32_t>& got) {
  size_t i = 0;
  while (i < expected.size() && i < got.size() && expected[i] == got[i]) ++i;
  auto show = [&tok](const std::vector<int32_t>& ids, size_t at) {
    if (at >= ids.size()) return std::string("(end)");
    std::optional<std::string_view> text = tok.token_text(ids[at]);
    return std::to_string(ids[at]) + " (" + json_quote(text ? std::string(*text) : "?") + ")";
  };
  std::ostringstream out;
  out << "first difference at index " << i << ": expected " << show(expected, i) << ", got "
      << show(got, i) << "; lengths " << expected.size() << " vs " << got.size();
  return out.str();
}

void check_parity(const char* name, const Tokenizer* tok, const char* expected_file) {
  if (tok == nullptr) {
    MESSAGE("SKIPPED: tests/fixtures/npm/tokenizer-" << std::string(name)
                                                     << " is absent (run deploy/install-deps.sh)");
    return;
  }
  const std::vector<std::string> corpus =
      testing::read_json_string_lines(tokenizer_fixture_dir() / "corpus.jsonl");
  const std::vector<Expected> expected = read_expected(tokenizer_fixture_dir() / expected_file);
  REQUIRE(corpus.size() >= 300);
  REQUIRE(corpus.size() == expected.size());

  size_t n_ids_equal = 0;
  size_t n_round_trips = 0;
  size_t n_reported = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::vector<int32_t> ids = testing::encode_or_fail(*tok, corpus[i], false);
    const std::vector<int32_t> ids_special = testing::encode_or_fail(*tok, corpus[i], true);
    const std::string decoded = tok->decode(ids, /*skip_special_tokens=*/false);
    const bool ok = ids == expected[i].ids && ids_special == expected[i].ids_special &&
                    decoded == expected[i].decoded;
    if (ids == expected[i].ids) ++n_ids_equal;
    // Where HF's decode(encode(s)) gives s back, ours must too.
    if (expected[i].decoded == corpus[i] && decoded == corpus[i]) ++n_round_trips;
    if (!ok && n_reported++ < 5) {
      std::string detail =
          ids != expected[i].ids ? describe_mismatch(*tok, expected[i].ids, ids)
          : ids_special != expected[i].ids_special
              ? "with special tokens: " +
                    describe_mismatch(*tok, expected[i].ids_special, ids_special)
              : "decode: expected " + shorten(expected[i].decoded) + ", got " + shorten(decoded);
      FAIL_CHECK(std::string(name)
                 << " corpus line " << i + 1 << " " << shorten(corpus[i]) << ": " << detail);
    }
  }
  size_t n_hf_round_trips = 0;
  for (size_t i = 0; i < corpus.size(); ++i) n_hf_round_trips += expected[i].decoded == corpus[i];
  CHECK(n_ids_equal == corpus.size());
  CHECK(n_round_trips == n_hf_round_trips);
  MESSAGE(std::string(name) << ": " << n_ids_equal << "/" << corpus.size()
                            << " strings with identical ids; " << n_round_trips
                            << " round-trip exactly (HF: " << n_hf_round_trips << ")");
}

}  // namespace

TEST_CASE("tokenizer parity: qwen3 ids and decoded text equal HF's on the whole corpus") {
  check_parity("qwen3", testing::qwen3(), "qwen3_expected.jsonl");
}

TEST_CASE("tokenizer parity: llama2 ids and decoded text equal HF's on the whole corpus") {
  check_parity("llama2", testing::llama2(), "llama2_expected.jsonl");
}

TEST_CASE("tokenizer parity: load and encode timings of the 151k-vocab qwen3 tokenizer") {
  const std::filesystem::path path =
      testing::npm_fixture_dir() / "tokenizer-qwen3" / "models" / "tokenizer.json";
  if (!std::filesystem::exists(path)) {
    MESSAGE("SKIPPED: " << path << " is absent (run deploy/install-deps.sh)");
    return;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(path);
  const auto t1 = Clock::now();
  REQUIRE(tok.is_ok());
  // ~10 kB of English: the corpus's first lines (prose) repeated.
  const std::vector<std::string> corpus =
      testing::read_json_string_lines(tokenizer_fixture_dir() / "corpus.jsonl");
  std::string text;
  for (size_t i = 0; text.size() < 10000; i = (i + 1) % 30) {
    text += corpus[i];
    text += '\n';
  }
  const auto t2 = Clock::now();
  const std::vector<int32_t> ids = testing::encode_or_fail(**tok, text);
  const auto t3 = Clock::now();
  CHECK((*tok)->decode(ids, false) == text);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  MESSAGE("qwen3 (informational, build-type dependent): load "
          << ms(t1 - t0) << " ms; encode " << text.size() << " bytes -> " << ids.size()
          << " ids in " << ms(t3 - t2) << " ms");
}

}  // namespace dancemoe::tokenizer
