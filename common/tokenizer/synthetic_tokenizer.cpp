#include "common/tokenizer/synthetic_tokenizer.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/base/file_util.h"
#include "common/base/json_field.h"
#include "common/tokenizer/bpe_trainer.h"
#include "common/tokenizer/pre_tokenizer.h"

namespace dancemoe::tokenizer {
namespace {

// Training text, written for this project. Plain English with some numbers
// and punctuation, so that the learned merges look like a real vocabulary's
// first few hundred entries (" the", "ing", " and", ...).
constexpr std::string_view kTrainingText =
    "The small harbour town wakes up before the sun. Fishing boats come back with the night's "
    "catch, and the first train of the day leaves the station at 5:40, carrying workers, "
    "students and a few sleepy travellers to the city. By seven o'clock the bakery on the corner "
    "has sold most of its bread, and the smell of coffee drifts along the street.\n\n"
    "In the afternoon the market fills with people. Farmers sell apples, pears, potatoes and "
    "cheese; a man repairs bicycles under a green umbrella; children chase each other between "
    "the stalls while their parents talk about the weather, the price of fish and the new bridge "
    "that the council has been promising for 12 years. Nobody really believes it will be built, "
    "but everybody likes to talk about it.\n\n"
    "When the evening comes, the lights of the houses are reflected in the water. Some people "
    "walk along the old wall of the harbour, others sit in the small restaurants and order soup, "
    "bread and a glass of wine. The last train returns at 23:15. It is usually almost empty, "
    "except on Fridays, when young people come home from the city and the carriages are full of "
    "laughter, music and stories about the week.\n\n"
    "A computer does something similar with words. It reads a long text, counts which pairs of "
    "letters appear together most often, and joins them into a single piece. Then it counts "
    "again, and joins the next pair, and so on, until it has learned thousands of pieces: short "
    "ones such as \"th\" or \"ing\", and longer ones such as \" station\" or \" together\". "
    "Every sentence can then be written as a sequence of these pieces, and each piece has a "
    "number. The model never sees the letters themselves; it only sees the numbers, and it learns "
    "which number is likely to come next.\n\n"
    "This is why a tokenizer matters so much. If the pieces are chosen well, common words need "
    "only one number, rare words need a few, and nothing is ever impossible to write, because "
    "every single byte is a piece of its own. The town, the boats, the market and the trains are "
    "all just numbers in the end: 1, 2, 3, 42, 100, 2024.\n";

constexpr std::string_view kQwenSplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::string_view kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' "
    "}}{% endif %}";

constexpr const char* kSpecialTokens[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};

using Json = nlohmann::ordered_json;
using WordCounts = std::map<std::string, int64_t>;

Json byte_level_component() {
  return Json{{"type", "ByteLevel"},
              {"add_prefix_space", false},
              {"trim_offsets", false},
              {"use_regex", false}};
}

Json pre_tokenizer_json() {
  return Json{
      {"type", "Sequence"},
      {"pretokenizers", Json::array({Json{{"type", "Split"},
                                          {"pattern", {{"Regex", std::string(kQwenSplitPattern)}}},
                                          {"behavior", "Isolated"},
                                          {"invert", false}},
                                     byte_level_component()})}};
}

Json added_token_json(int32_t id, const char* content) {
  return Json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
              {"rstrip", false}, {"normalized", false}, {"special", true}};
}

// Word counts of the training text, cut by the same pre-tokenizer the
// tokenizer.json declares (our own implementation of it).
Result<WordCounts> training_words() {
  const nlohmann::json pre_json = nlohmann::json::parse(pre_tokenizer_json().dump());
  const std::string source = "synthetic tokenizer";
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> pre,
                        PreTokenizer::parse(JsonField(pre_json, source, "pre_tokenizer")));
  std::vector<std::string> words;
  DMOE_RETURN_IF_ERROR(pre->pre_tokenize(kTrainingText, words));
  WordCounts counts;
  for (const std::string& word : words) ++counts[word];
  return counts;
}

}  // namespace

Result<SyntheticTokenizerFiles> make_synthetic_tokenizer(int32_t vocab_size) {
  if (vocab_size < kMinSyntheticVocabSize || vocab_size > kMaxSyntheticVocabSize) {
    return invalid_argument(
        "synthetic tokenizer: vocab_size must be in [" + std::to_string(kMinSyntheticVocabSize) +
        ", " + std::to_string(kMaxSyntheticVocabSize) + "], got " + std::to_string(vocab_size));
  }
  DMOE_ASSIGN_OR_RETURN(WordCounts words, training_words());
  const int32_t n_bpe_tokens = vocab_size - 3;
  const BpeTrainingResult trained = train_byte_level_bpe(words, n_bpe_tokens);

  // ordered_json's operator[] searches linearly; the vocabulary's strings
  // are unique, so append to the underlying vector directly.
  Json::object_t vocab_entries;
  vocab_entries.reserve(trained.vocab.size());
  for (size_t id = 0; id < trained.vocab.size(); ++id) {
    vocab_entries.emplace_back(trained.vocab[id], id);
  }
  const Json vocab(std::move(vocab_entries));
  Json merges = Json::array();
  for (const auto& [left, right] : trained.merges) merges.push_back(Json::array({left, right}));

  Json added = Json::array();
  Json added_decoder = Json::object();
  for (int32_t k = 0; k < 3; ++k) {
    const int32_t id = n_bpe_tokens + k;
    added.push_back(added_token_json(id, kSpecialTokens[k]));
    Json entry = added.back();
    entry.erase("id");
    added_decoder[std::to_string(id)] = entry;
  }

  const Json tokenizer = {{"version", "1.0"},
                          {"truncation", nullptr},
                          {"padding", nullptr},
                          {"added_tokens", added},
                          {"normalizer", {{"type", "NFC"}}},
                          {"pre_tokenizer", pre_tokenizer_json()},
                          {"post_processor", byte_level_component()},
                          {"decoder", byte_level_component()},
                          {"model",
                           {{"type", "BPE"},
                            {"dropout", nullptr},
                            {"unk_token", nullptr},
                            {"continuing_subword_prefix", ""},
                            {"end_of_word_suffix", ""},
                            {"fuse_unk", false},
                            {"byte_fallback", false},
                            {"ignore_merges", false},
                            {"vocab", vocab},
                            {"merges", merges}}}};

  const Json config = {{"add_bos_token", false},
                       {"add_prefix_space", false},
                       {"added_tokens_decoder", added_decoder},
                       {"additional_special_tokens", Json::array({"<|im_start|>", "<|im_end|>"})},
                       {"bos_token", nullptr},
                       {"chat_template", std::string(kChatMlTemplate)},
                       {"clean_up_tokenization_spaces", false},
                       {"eos_token", "<|im_end|>"},
                       {"errors", "replace"},
                       {"model_max_length", 32768},
                       {"pad_token", "<|endoftext|>"},
                       {"split_special_tokens", false},
                       {"tokenizer_class", "Qwen2Tokenizer"},
                       {"unk_token", nullptr}};

  return SyntheticTokenizerFiles{tokenizer.dump(2) + "\n", config.dump(2) + "\n"};
}

Status write_synthetic_tokenizer(const std::filesystem::path& dir, int32_t vocab_size) {
  DMOE_ASSIGN_OR_RETURN(SyntheticTokenizerFiles files, make_synthetic_tokenizer(vocab_size));
  for (const auto& [name, text] :
       {std::pair{"tokenizer.json", &files.tokenizer_json},
        std::pair{"tokenizer_config.json", &files.tokenizer_config_json}}) {
    DMOE_RETURN_IF_ERROR(write_file(dir / name, *text));
  }
  return Status::ok();
}

}  // namespace dancemoe::tokenizer
