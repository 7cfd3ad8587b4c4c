#include "common/model/gguf/gguf_tokenizer.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace dancemoe::gguf {
namespace {

// std::map-backed: vocabularies have 10^5 entries (ordered_json inserts in linear time).
using Json = nlohmann::json;

// token_type values (llama.cpp's llama_token_type).
constexpr int64_t kTypeNormal = 1;
constexpr int64_t kTypeUnknown = 2;
constexpr int64_t kTypeControl = 3;
constexpr int64_t kTypeUserDefined = 4;
constexpr int64_t kTypeUnused = 5;
constexpr int64_t kTypeByte = 6;

// Pre-tokenizer regexes of the byte-level BPE families, by llama.cpp's
// tokenizer.ggml.pre name (the same patterns their tokenizer.json files use).
struct PreTokenizer {
  std::string_view name;
  std::string_view regex;
  bool nfc;  // the family's tokenizer.json also has an NFC normalizer
};
constexpr PreTokenizer kPreTokenizers[] = {
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true},
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false},
    {"gpt-2", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
     false},
};

const PreTokenizer* pre_by_name(std::string_view name) {
  if (name == "default") name = "gpt-2";
  for (const PreTokenizer& p : kPreTokenizers) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

class MetadataReader {
 public:
  MetadataReader(const File& file, std::string_view file_name) : file_(file), name_(file_name) {}

  Status error(std::string_view key, const std::string& what) const {
    return invalid_argument(std::string(name_) + ": metadata '" + std::string(key) + "': " + what);
  }
  Result<const std::vector<std::string>*> strings(std::string_view key) const {
    const Value* v = file_.find(key);
    if (v == nullptr)
      return not_found(std::string(name_) + ": metadata '" + std::string(key) + "' is missing");
    if (v->type != ValueType::kArray || v->array_type != ValueType::kString) {
      return error(key, "expected an array of strings");
    }
    return &v->strings;
  }
  // An integer / bool array of exactly n elements, or nullptr when absent.
  Result<const std::vector<int64_t>*> integers_or_null(std::string_view key, size_t n) const {
    const Value* v = file_.find(key);
    if (v == nullptr) return static_cast<const std::vector<int64_t>*>(nullptr);
    if (v->type != ValueType::kArray || v->array_type == ValueType::kString ||
        v->array_type == ValueType::kArray || v->array_type == ValueType::kF32 ||
        v->array_type == ValueType::kF64) {
      return error(key, "expected an array of integers");
    }
    if (v->integers.size() != n) {
      return error(key, std::to_string(v->integers.size()) + " entries for " + std::to_string(n) +
                            " tokens");
    }
    return &v->integers;
  }
  Result<const std::vector<double>*> reals_or_null(std::string_view key, size_t n) const {
    const Value* v = file_.find(key);
    if (v == nullptr) return static_cast<const std::vector<double>*>(nullptr);
    if (v->type != ValueType::kArray ||
        (v->array_type != ValueType::kF32 && v->array_type != ValueType::kF64)) {
      return error(key, "expected an array of floats");
    }
    if (v->reals.size() != n) {
      return error(
          key, std::to_string(v->reals.size()) + " entries for " + std::to_string(n) + " tokens");
    }
    return &v->reals;
  }
  Result<std::optional<std::string>> string_or_none(std::string_view key) const {
    const Value* v = file_.find(key);
    if (v == nullptr) return std::optional<std::string>();
    if (v->type != ValueType::kString) return error(key, "expected a string");
    return std::optional<std::string>(v->text);
  }
  Result<bool> bool_or(std::string_view key, bool fallback) const {
    const Value* v = file_.find(key);
    if (v == nullptr) return fallback;
    if (v->type != ValueType::kBool) return error(key, "expected a bool");
    return v->integer != 0;
  }
  // A token id in [0, n), or nullopt when absent.
  Result<std::optional<int64_t>> token_id(std::string_view key, size_t n) const {
    const Value* v = file_.find(key);
    if (v == nullptr) return std::optional<int64_t>();
    if (!v->is_integer() || v->integer_overflows) return error(key, "expected an integer token id");
    if (v->integer < 0 || v->integer >= static_cast<int64_t>(n)) {
      return error(key, "token id " + std::to_string(v->integer) + " is outside the " +
                            std::to_string(n) + " tokens");
    }
    return std::optional<int64_t>(v->integer);
  }

 private:
  const File& file_;
  std::string_view name_;
};

Json added_token(int64_t id, const std::string& content, bool special) {
  return Json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
              {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// HF's sentencepiece -> BPE conversion: every split of every piece into two
// vocabulary pieces, ordered by the piece's score (highest first; ties keep
// id order), splits of one piece by the ids of their halves. Splits fall on
// UTF-8 character boundaries.
std::vector<std::pair<std::string, std::string>> merges_from_scores(
    const std::vector<std::string>& tokens, const std::vector<double>& scores,
    const std::unordered_map<std::string, int64_t>& vocab) {
  struct Merge {
    double score;
    int64_t left, right;
    size_t split;
    int64_t piece;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& piece = tokens[id];
    std::vector<Merge> local;
    for (size_t i = 1; i < piece.size(); ++i) {
      if ((static_cast<unsigned char>(piece[i]) & 0xC0) == 0x80) continue;  // mid-character
      auto l = vocab.find(piece.substr(0, i));
      auto r = vocab.find(piece.substr(i));
      if (l != vocab.end() && r != vocab.end()) {
        local.push_back({scores[id], l->second, r->second, i, static_cast<int64_t>(id)});
      }
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) {
    const std::string& piece = tokens[static_cast<size_t>(m.piece)];
    out.emplace_back(piece.substr(0, m.split), piece.substr(m.split));
  }
  return out;
}

Json template_with_bos(const std::string& bos_text, int64_t bos_id) {
  Json single = Json::array({Json{{"SpecialToken", {{"id", bos_text}, {"type_id", 0}}}},
                             Json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}});
  Json pair = single;
  pair.push_back(Json{{"SpecialToken", {{"id", bos_text}, {"type_id", 1}}}});
  pair.push_back(Json{{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  return Json{{"type", "TemplateProcessing"},
              {"single", single},
              {"pair", pair},
              {"special_tokens",
               {{bos_text, {{"id", bos_text}, {"ids", {bos_id}}, {"tokens", {bos_text}}}}}}};
}

}  // namespace

Result<TokenizerTexts> tokenizer_from_gguf(const File& file, std::string_view file_name) {
  MetadataReader md(file, file_name);
  DMOE_ASSIGN_OR_RETURN(std::optional<std::string> kind, md.string_or_none("tokenizer.ggml.model"));
  if (!kind) {
    return not_found(std::string(file_name) +
                     ": metadata 'tokenizer.ggml.model' is missing (no tokenizer)");
  }
  if (*kind != "gpt2" && *kind != "llama") {
    return md.error("tokenizer.ggml.model",
                    "'" + *kind + "' is not supported (expected gpt2 or llama)");
  }
  const bool spm = *kind == "llama";
  DMOE_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                        md.strings("tokenizer.ggml.tokens"));
  const size_t n = tokens->size();
  if (n == 0) return md.error("tokenizer.ggml.tokens", "no tokens");
  DMOE_ASSIGN_OR_RETURN(const std::vector<int64_t>* types,
                        md.integers_or_null("tokenizer.ggml.token_type", n));
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> bos, md.token_id("tokenizer.ggml.bos_token_id", n));
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> eos, md.token_id("tokenizer.ggml.eos_token_id", n));
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> unk,
                        md.token_id("tokenizer.ggml.unknown_token_id", n));
  DMOE_ASSIGN_OR_RETURN(bool add_bos, md.bool_or("tokenizer.ggml.add_bos_token", spm));
  DMOE_ASSIGN_OR_RETURN(bool add_space_prefix, md.bool_or("tokenizer.ggml.add_space_prefix", spm));
  DMOE_ASSIGN_OR_RETURN(std::optional<std::string> chat_template,
                        md.string_or_none("tokenizer.chat_template"));
  // Named templates (llama.cpp's convert writes HF's list form this way):
  // `tokenizer.chat_templates` names them, `tokenizer.chat_template.NAME`
  // holds each.
  Json named_templates = Json::array();
  if (file.find("tokenizer.chat_templates") != nullptr) {
    DMOE_ASSIGN_OR_RETURN(const std::vector<std::string>* names,
                          md.strings("tokenizer.chat_templates"));
    for (const std::string& name : *names) {
      if (name == "default") continue;
      const std::string key = "tokenizer.chat_template." + name;
      DMOE_ASSIGN_OR_RETURN(std::optional<std::string> source, md.string_or_none(key));
      if (!source) return md.error(key, "missing (named in tokenizer.chat_templates)");
      named_templates.push_back(Json{{"name", name}, {"template", *source}});
    }
  }

  auto type_of = [&](size_t id) { return types ? (*types)[id] : kTypeNormal; };
  Json vocab = Json::object();
  Json added = Json::array();
  std::unordered_map<std::string, int64_t> vocab_ids;
  for (size_t id = 0; id < n; ++id) {
    const int64_t type = type_of(id);
    if (type == kTypeUnused) continue;
    const bool is_added =
        type == kTypeControl || type == kTypeUserDefined || (spm && type == kTypeUnknown);
    // Sentencepiece vocabularies keep their control tokens in the model
    // vocabulary too (as HF's llama tokenizer.json does).
    if (!is_added || (spm && type != kTypeUserDefined)) {
      vocab[(*tokens)[id]] = id;
      vocab_ids.emplace((*tokens)[id], static_cast<int64_t>(id));
    }
    if (is_added)
      added.push_back(
          added_token(static_cast<int64_t>(id), (*tokens)[id], type != kTypeUserDefined));
  }

  Json merges = Json::array();
  const Value* merges_value = file.find("tokenizer.ggml.merges");
  if (merges_value != nullptr) {
    DMOE_ASSIGN_OR_RETURN(const std::vector<std::string>* list,
                          md.strings("tokenizer.ggml.merges"));
    for (const std::string& m : *list) {
      const size_t space = m.find(' ', 1);
      if (space == std::string::npos || space + 1 >= m.size()) {
        return md.error("tokenizer.ggml.merges",
                        "entry '" + m + "' is not two tokens separated by a space");
      }
      merges.push_back(Json::array({m.substr(0, space), m.substr(space + 1)}));
    }
  } else if (spm) {
    DMOE_ASSIGN_OR_RETURN(const std::vector<double>* scores,
                          md.reals_or_null("tokenizer.ggml.scores", n));
    if (scores == nullptr) {
      return md.error("tokenizer.ggml.scores", "missing: a llama tokenizer needs merges or scores");
    }
    for (auto& [l, r] : merges_from_scores(*tokens, *scores, vocab_ids)) {
      merges.push_back(Json::array({l, r}));
    }
  } else {
    return not_found(std::string(file_name) +
                     ": metadata 'tokenizer.ggml.merges' is missing (a gpt2 tokenizer needs it)");
  }

  Json tok;
  tok["version"] = "1.0";
  tok["truncation"] = nullptr;
  tok["padding"] = nullptr;
  tok["added_tokens"] = added;
  Json model{{"type", "BPE"}, {"dropout", nullptr}};
  if (spm) {
    model["unk_token"] = unk ? Json((*tokens)[static_cast<size_t>(*unk)]) : Json(nullptr);
    model["fuse_unk"] = true;
    model["byte_fallback"] = true;
    Json norm = Json::array();
    if (add_space_prefix) norm.push_back(Json{{"type", "Prepend"}, {"prepend", "\u2581"}});
    norm.push_back(
        Json{{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
    tok["normalizer"] = Json{{"type", "Sequence"}, {"normalizers", norm}};
    tok["pre_tokenizer"] = nullptr;
    Json dec = Json::array(
        {Json{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
         Json{{"type", "ByteFallback"}}, Json{{"type", "Fuse"}}});
    if (add_space_prefix)
      dec.push_back(Json{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    tok["decoder"] = Json{{"type", "Sequence"}, {"decoders", dec}};
  } else {
    DMOE_ASSIGN_OR_RETURN(std::optional<std::string> pre_name,
                          md.string_or_none("tokenizer.ggml.pre"));
    const PreTokenizer* pre = pre_by_name(pre_name.value_or("default"));
    if (pre == nullptr) {
      return md.error("tokenizer.ggml.pre",
                      "pre-tokenizer '" + *pre_name +
                          "' is not supported (supported: qwen2, llama-bpe, gpt-2, default)");
    }
    model["unk_token"] = nullptr;
    model["continuing_subword_prefix"] = "";
    model["end_of_word_suffix"] = "";
    model["fuse_unk"] = false;
    model["byte_fallback"] = false;
    tok["normalizer"] = pre->nfc ? Json{{"type", "NFC"}} : Json(nullptr);
    const Json byte_level{{"type", "ByteLevel"},
                          {"add_prefix_space", false},
                          {"trim_offsets", false},
                          {"use_regex", false}};
    tok["pre_tokenizer"] =
        Json{{"type", "Sequence"},
             {"pretokenizers", Json::array({Json{{"type", "Split"},
                                                 {"pattern", {{"Regex", std::string(pre->regex)}}},
                                                 {"behavior", "Isolated"},
                                                 {"invert", false}},
                                            byte_level})}};
    tok["decoder"] = byte_level;
  }
  tok["post_processor"] = add_bos && bos
                              ? template_with_bos((*tokens)[static_cast<size_t>(*bos)], *bos)
                              : Json{{"type", "ByteLevel"},
                                     {"add_prefix_space", false},
                                     {"trim_offsets", false},
                                     {"use_regex", false}};
  if (spm && !(add_bos && bos)) tok["post_processor"] = nullptr;
  model["vocab"] = std::move(vocab);
  model["merges"] = std::move(merges);
  tok["model"] = std::move(model);

  Json config = Json::object();
  if (bos) config["bos_token"] = (*tokens)[static_cast<size_t>(*bos)];
  if (eos) config["eos_token"] = (*tokens)[static_cast<size_t>(*eos)];
  if (!named_templates.empty()) {
    Json all = Json::array();
    if (chat_template) all.push_back(Json{{"name", "default"}, {"template", *chat_template}});
    for (Json& t : named_templates) all.push_back(std::move(t));
    config["chat_template"] = std::move(all);
  } else if (chat_template) {
    config["chat_template"] = *chat_template;
  }
  return TokenizerTexts{tok.dump(), config.dump()};
}

Status tokenizer_to_gguf(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                         std::string_view source_name, int64_t vocab_size, GgufWriter* writer) {
  const std::string src(source_name);
  Json tok, config = Json::object();
  try {
    tok = Json::parse(tokenizer_json);
    if (!tokenizer_config_json.empty()) config = Json::parse(tokenizer_config_json);
  } catch (const Json::exception& e) {
    return invalid_argument(src + ": not valid JSON (" + e.what() + ")");
  }
  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object() ||
      tok["model"].value("type", "") != "BPE" || !tok["model"].contains("vocab") ||
      !tok["model"]["vocab"].is_object()) {
    return invalid_argument(
        src + ": model: expected a BPE model with a vocab (GGUF describes only BPE tokenizers)");
  }
  const Json& model = tok["model"];
  const bool spm = model.value("byte_fallback", false);
  // Ids: the model vocabulary plus the added tokens.
  std::map<int64_t, std::pair<std::string, int64_t>> by_id;  // id -> (text, token_type)
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return invalid_argument(src + ": model.vocab['" + text + "']: expected a non-negative id");
    }
    const bool byte = spm && text.size() == 6 && text.rfind("<0x", 0) == 0 && text[5] == '>';
    by_id[id.get<int64_t>()] = {text, byte ? kTypeByte : kTypeNormal};
  }
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const Json& a : tok["added_tokens"]) {
      const int64_t id = a.value("id", int64_t{-1});
      if (id < 0) return invalid_argument(src + ": added_tokens: an entry without an id");
      const int64_t type = a.value("special", false) ? kTypeControl : kTypeUserDefined;
      by_id[id] = {a.value("content", std::string()), type};
    }
  }
  if (by_id.empty()) return invalid_argument(src + ": model.vocab is empty");
  const int64_t n = by_id.rbegin()->first + 1;
  if (n != static_cast<int64_t>(by_id.size())) {
    return invalid_argument(src + ": token ids are not contiguous from 0 (" +
                            std::to_string(by_id.size()) + " tokens, largest id " +
                            std::to_string(n - 1) + ")");
  }
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::unordered_map<std::string, int64_t> ids;
  for (auto& [id, entry] : by_id) {
    tokens.push_back(entry.first);
    types.push_back(static_cast<int32_t>(entry.second));
    ids.emplace(entry.first, id);
  }
  for (int64_t id = n; id < vocab_size; ++id) {
    tokens.push_back("[PAD" + std::to_string(id) + "]");
    types.push_back(static_cast<int32_t>(kTypeUnused));
  }
  std::vector<std::string> merges;
  for (const Json& m : model.value("merges", Json::array())) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      return invalid_argument(src + ": model.merges: expected \"a b\" strings or [a, b] pairs");
    }
  }
  auto id_of_config_token = [&](const char* key) -> std::optional<int64_t> {
    if (!config.contains(key)) return std::nullopt;
    const Json& v = config[key];
    const std::string text = v.is_string()   ? v.get<std::string>()
                             : v.is_object() ? v.value("content", std::string())
                                             : std::string();
    auto it = ids.find(text);
    return it == ids.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };

  writer->set_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (spm) {
    writer->set_string("tokenizer.ggml.pre", "default");
    // Scores that reproduce the merge order in a sentencepiece-style merger:
    // a piece scores minus the rank of the first merge that makes it; pieces
    // no merge makes score lower than all of those.
    std::unordered_map<std::string, size_t> first_rank;
    for (size_t r = 0; r < merges.size(); ++r) {
      const size_t space = merges[r].find(' ', 1);
      std::string joined = merges[r].substr(0, space) + merges[r].substr(space + 1);
      first_rank.emplace(std::move(joined), r);
    }
    std::vector<float> scores;
    for (const std::string& t : tokens) {
      auto it = first_rank.find(t);
      scores.push_back(it == first_rank.end() ? -1e9f : -static_cast<float>(it->second));
    }
    writer->set_string_array("tokenizer.ggml.tokens", tokens);
    writer->set_f32_array("tokenizer.ggml.scores", scores);
    writer->set_i32_array("tokenizer.ggml.token_type", types);
    writer->set_string_array("tokenizer.ggml.merges", merges);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      auto it = ids.find(model["unk_token"].get<std::string>());
      if (it != ids.end())
        writer->set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(it->second));
    }
    bool prepend = false;
    const Json& norm = tok.value("normalizer", Json());
    if (norm.is_object()) {
      for (const Json& step : norm.value("normalizers", Json::array())) {
        if (step.value("type", "") == "Prepend") prepend = true;
      }
      if (norm.value("type", "") == "Prepend") prepend = true;
    }
    writer->set_bool("tokenizer.ggml.add_space_prefix", prepend);
  } else {
    std::string pre_name;
    const Json& pre = tok.value("pre_tokenizer", Json());
    std::string regex;
    if (pre.is_object() && pre.value("type", "") == "Sequence") {
      for (const Json& step : pre.value("pretokenizers", Json::array())) {
        if (step.value("type", "") == "Split" && step.contains("pattern") &&
            step["pattern"].contains("Regex")) {
          regex = step["pattern"]["Regex"].get<std::string>();
        }
      }
    } else if (pre.is_object() && pre.value("type", "") == "ByteLevel" &&
               pre.value("use_regex", true)) {
      pre_name = "gpt-2";
    }
    for (const PreTokenizer& p : kPreTokenizers) {
      if (!regex.empty() && p.regex == regex) pre_name = std::string(p.name);
    }
    if (pre_name.empty()) {
      return invalid_argument(
          src + ": pre_tokenizer: its regex is not one GGUF names (qwen2, llama-bpe, gpt-2)");
    }
    writer->set_string("tokenizer.ggml.pre", pre_name);
    writer->set_string_array("tokenizer.ggml.tokens", tokens);
    writer->set_i32_array("tokenizer.ggml.token_type", types);
    writer->set_string_array("tokenizer.ggml.merges", merges);
  }
  if (auto bos = id_of_config_token("bos_token"))
    writer->set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*bos));
  if (auto eos = id_of_config_token("eos_token"))
    writer->set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*eos));
  if (auto pad = id_of_config_token("pad_token"))
    writer->set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*pad));
  // add_bos_token follows the post-processor (what HF actually adds).
  bool adds_bos = false;
  const Json& post = tok.value("post_processor", Json());
  if (post.is_object() && post.value("type", "") == "TemplateProcessing") {
    const Json single = post.value("single", Json::array());
    adds_bos = !single.empty() && single[0].contains("SpecialToken");
  }
  writer->set_bool("tokenizer.ggml.add_bos_token", adds_bos);
  if (config.contains("chat_template") && config["chat_template"].is_string()) {
    writer->set_string("tokenizer.chat_template", config["chat_template"].get<std::string>());
  } else if (config.contains("chat_template") && config["chat_template"].is_array()) {
    // HF's named templates, as llama.cpp writes them.
    std::vector<std::string> names;
    for (const Json& t : config["chat_template"]) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
          !t.contains("template") || !t["template"].is_string()) {
        return invalid_argument(src +
                                ": tokenizer_config.json chat_template: expected a list of "
                                "{\"name\", \"template\"} strings");
      }
      const std::string name = t["name"].get<std::string>();
      const std::string text = t["template"].get<std::string>();
      writer->set_string(
          name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name, text);
      names.push_back(name);
    }
    writer->set_string_array("tokenizer.chat_templates", std::move(names));
  }
  return Status::ok();
}

}  // namespace dancemoe::gguf
