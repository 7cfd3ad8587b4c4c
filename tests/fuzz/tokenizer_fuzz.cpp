// Fuzz target for the tokenizer: arbitrary bytes as input text, as token ids
// and as tokenizer.json must never crash, and decoding must always give
// valid UTF-8, with streaming decode equal to decode for clean text.
//
// The first input byte picks the mode (byte % 3):
//   0  the rest is text: encode + decode + stream with two tokenizers
//   1  the rest is little-endian int32 ids: decode + stream
//   2  the rest is a tokenizer.json text: load, then encode/decode a sample
// The two fixed tokenizers are built in memory (no files needed): the
// synthetic byte-level one (Qwen pipeline) and a tiny sentencepiece-style
// one (Prepend/Replace normaliser, byte fallback, Llama decoder).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/incremental_decoder.h"
#include "common/tokenizer/synthetic_tokenizer.h"
#include "common/tokenizer/tokenizer.h"
#include "common/tokenizer/utf8.h"

namespace {

using dancemoe::tokenizer::IncrementalDecoder;
using dancemoe::tokenizer::Tokenizer;

void require(bool condition) {
  if (!condition) std::abort();
}

std::string sentencepiece_json() {
  std::string vocab =
      R"("<unk>": 0, "<s>": 1, "</s>": 2, "▁": 3, "a": 4, "b": 5, "▁a": 6, "ab": 7)";
  for (int b = 0; b < 256; ++b) {
    char entry[32];
    std::snprintf(entry, sizeof entry, ", \"<0x%02X>\": %d", b, 8 + b);
    vocab += entry;
  }
  return R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                              {"id": 1, "content": "<s>", "special": true},
                              {"id": 2, "content": "</s>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"},
      {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
      {"type": "ByteFallback"}, {"type": "Fuse"},
      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
      "merges": ["▁ a", "a b"], "vocab": {)" +
         vocab + "}}}";
}

const std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
  static const std::vector<std::unique_ptr<Tokenizer>> all = [] {
    std::vector<std::unique_ptr<Tokenizer>> list;
    auto files = dancemoe::tokenizer::make_synthetic_tokenizer(600);
    require(files.is_ok());
    auto synthetic =
        Tokenizer::from_json_text(files->tokenizer_json, files->tokenizer_config_json, "synthetic");
    require(synthetic.is_ok());
    list.push_back(std::move(synthetic).value());
    auto sentencepiece = Tokenizer::from_json_text(sentencepiece_json(), "", "sentencepiece");
    require(sentencepiece.is_ok());
    list.push_back(std::move(sentencepiece).value());
    return list;
  }();
  return all;
}

// `exact`: the tokenizer's decoders are prefix-stable (all fixed ones are;
// a fuzzed tokenizer.json may hold e.g. Strip with stop > 0), so streaming
// must reproduce decode() for text without U+FFFD.
void check_decoding(const Tokenizer& tok, const std::vector<int32_t>& ids, bool exact = true) {
  for (bool skip : {false, true}) {
    const std::string text = tok.decode(ids, skip);
    require(dancemoe::tokenizer::utf8_is_valid(text));
    IncrementalDecoder decoder(tok, skip);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = decoder.push(id);
      require(dancemoe::tokenizer::utf8_is_valid(piece));
      streamed += piece;
    }
    streamed += decoder.flush();
    if (exact && text.find("\xEF\xBF\xBD") == std::string::npos) require(streamed == text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      for (const auto& tok : tokenizers()) {
        for (bool special : {false, true}) {
          auto ids = tok->encode(rest, special);
          require(ids.is_ok());
          check_decoding(*tok, *ids);
        }
      }
      break;
    case 1: {
      std::vector<int32_t> ids(rest.size() / 4);
      if (!ids.empty()) std::memcpy(ids.data(), rest.data(), ids.size() * 4);
      for (const auto& tok : tokenizers()) {
        std::vector<int32_t> bounded = ids;  // also aim at real ids, not only garbage
        for (int32_t& id : bounded) id = static_cast<int32_t>(static_cast<uint32_t>(id) % 700);
        check_decoding(*tok, ids);
        check_decoding(*tok, bounded);
      }
      break;
    }
    default: {
      auto tok = Tokenizer::from_json_text(rest, "", "fuzz");
      if (!tok.is_ok()) {
        require(!tok.status().message().empty());
        break;
      }
      auto ids = (*tok)->encode("Hello wörld 😀 <s> ab\n\t", true);
      if (ids.is_ok()) check_decoding(**tok, *ids, /*exact=*/false);
      break;
    }
  }
  return 0;
}
