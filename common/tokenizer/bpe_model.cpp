#include "common/tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>

#include "common/base/json_field.h"
#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

constexpr char32_t kSmallCharLimit = 0x800;

std::string byte_token(uint8_t byte) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "<0x%02X>", byte);
  return buffer;
}

// A queued merge of the symbol at `pos` with its successor. The heap pops the
// lowest rank first and, among equal ranks, the leftmost position: the order
// of HF's BPE (and of the JS port's rank + position bias).
struct QueuedMerge {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
};
struct PopsAfter {
  bool operator()(const QueuedMerge& a, const QueuedMerge& b) const {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.pos > b.pos;
  }
};

std::string dump_value(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::parse(const JsonField& field) {
  DMOE_ASSIGN_OR_RETURN(JsonField type_field, field.member("type"));
  DMOE_ASSIGN_OR_RETURN(std::string_view type, type_field.as_string_view());
  if (type != "BPE") return type_field.unsupported(type, "BPE");

  auto model = std::unique_ptr<BpeModel>(new BpeModel());
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> dropout, field.optional_member("dropout"));
  if (dropout && !(dropout->json().is_number() && dropout->json().get<double>() == 0.0)) {
    return dropout->error("BPE dropout is not supported (encoding must be deterministic), found " +
                          dump_value(dropout->json()));
  }
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    DMOE_ASSIGN_OR_RETURN(std::string value, field.string_or(affix, ""));
    if (!value.empty()) {
      DMOE_ASSIGN_OR_RETURN(JsonField affix_field, field.member(affix));
      return affix_field.error("a non-empty value is not supported, found " + json_quote(value));
    }
  }
  DMOE_ASSIGN_OR_RETURN(model->byte_fallback_, field.bool_or("byte_fallback", false));
  DMOE_ASSIGN_OR_RETURN(model->fuse_unk_, field.bool_or("fuse_unk", false));
  DMOE_ASSIGN_OR_RETURN(model->ignore_merges_, field.bool_or("ignore_merges", false));

  DMOE_ASSIGN_OR_RETURN(JsonField vocab, field.member("vocab"));
  DMOE_RETURN_IF_ERROR(model->parse_vocab(vocab));
  DMOE_ASSIGN_OR_RETURN(JsonField merges, field.member("merges"));
  DMOE_RETURN_IF_ERROR(model->parse_merges(merges));

  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> unk, field.optional_member("unk_token"));
  if (unk) {
    DMOE_ASSIGN_OR_RETURN(std::string unk_token, unk->as_string());
    model->unk_id_ = model->token_to_id(unk_token);
    if (!model->unk_id_) return unk->error(json_quote(unk_token) + " is not in model.vocab");
  }
  for (int b = 0; b < 256; ++b) {
    const std::optional<int32_t> id = model->token_to_id(byte_token(static_cast<uint8_t>(b)));
    model->byte_fallback_ids_[static_cast<size_t>(b)] = id.value_or(-1);
  }
  return model;
}

Status BpeModel::parse_vocab(const JsonField& vocab) {
  DMOE_RETURN_IF_ERROR(vocab.expect_object());
  if (vocab.json().empty()) return vocab.error("the vocabulary is empty");
  vocab_.reserve(vocab.json().size());
  small_char_ids_.assign(kSmallCharLimit, -1);
  for (const auto& [token, value] : vocab.json().items()) {
    // Paths are only built for the error, not for each of ~150k entries.
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() > kMaxTokenId) {
      return vocab.entry(token, value)
          .error("expected a token id in [0, " + std::to_string(kMaxTokenId) + "], found " +
                 dump_value(value));
    }
    const auto id = static_cast<int32_t>(value.get<int64_t>());
    if (static_cast<size_t>(id) >= id_to_token_.size()) {
      id_to_token_.resize(static_cast<size_t>(id) + 1);
      id_present_.resize(static_cast<size_t>(id) + 1, false);
    }
    if (id_present_[static_cast<size_t>(id)]) {
      return vocab.entry(token, value)
          .error("id " + std::to_string(id) + " is also used by " +
                 json_quote(id_to_token_[static_cast<size_t>(id)]));
    }
    id_present_[static_cast<size_t>(id)] = true;
    id_to_token_[static_cast<size_t>(id)] = token;
    vocab_.emplace(token, id);
    const size_t length = token.empty() ? 0 : utf8_sequence_length(token, 0);
    if (length > 0 && length == token.size()) {
      const char32_t cp = utf8_decode_at(token, 0, length);
      if (cp < kSmallCharLimit) small_char_ids_[cp] = id;
    }
  }
  return Status::ok();
}

Status BpeModel::parse_merges(const JsonField& merges) {
  DMOE_RETURN_IF_ERROR(merges.expect_array());
  merges_.reserve(merges.json().size());
  std::string left;
  std::string right;
  for (size_t rank = 0; rank < merges.json().size(); ++rank) {
    const nlohmann::json& merge = merges.json()[rank];
    // Two serialisations exist: "left right" (tokenizers < 0.20) and
    // ["left", "right"] (>= 0.20, which allows spaces inside tokens).
    if (merge.is_string()) {
      const std::string& text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        return merges.element(rank).error("expected \"left right\" with exactly one space, found " +
                                          json_quote(text));
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      return merges.element(rank).error(
          "expected a merge \"left right\" or [\"left\", \"right\"], found " + dump_value(merge));
    }
    const std::optional<int32_t> left_id = token_to_id(left);
    const std::optional<int32_t> right_id = token_to_id(right);
    const std::optional<int32_t> merged_id = token_to_id(left + right);
    if (!left_id || !right_id || !merged_id) {
      const std::string& missing = !left_id ? left : !right_id ? right : left + right;
      return merges.element(rank).error("merge refers to " + json_quote(missing) +
                                        ", which is not in model.vocab");
    }
    // A repeated pair keeps its last rank, as HF's HashMap insert does.
    merges_[pair_key(*left_id, *right_id)] = {static_cast<int32_t>(rank), *merged_id};
  }
  return Status::ok();
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return nullptr;
  if (!id_present_[static_cast<size_t>(id)]) return nullptr;
  return &id_to_token_[static_cast<size_t>(id)];
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::optional<int32_t> BpeModel::char_id(std::string_view ch, char32_t code_point) const {
  if (code_point < kSmallCharLimit) {
    const int32_t id = small_char_ids_[code_point];
    if (id < 0) return std::nullopt;
    return id;
  }
  return token_to_id(ch);
}

void BpeModel::initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const {
  auto add = [&symbols](int32_t id) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1, true});
    if (index > 0) symbols[static_cast<size_t>(index) - 1].next = index;
  };
  bool pending_unk = false;  // a (fused) unk waiting to be added
  size_t pos = 0;
  while (pos < word.size()) {
    size_t length = utf8_sequence_length(word, pos);
    std::optional<int32_t> id;
    if (length > 0) {
      id = char_id(word.substr(pos, length), utf8_decode_at(word, pos, length));
    } else {
      length = 1;  // not reachable with valid UTF-8; handled as an unknown byte
    }
    const std::string_view ch = word.substr(pos, length);
    pos += length;
    if (id) {
      if (pending_unk) add(*unk_id_);
      pending_unk = false;
      add(*id);
      continue;
    }
    if (byte_fallback_ && std::all_of(ch.begin(), ch.end(), [this](char c) {
          return byte_fallback_ids_[static_cast<uint8_t>(c)] >= 0;
        })) {
      if (pending_unk) add(*unk_id_);
      pending_unk = false;
      for (char c : ch) add(byte_fallback_ids_[static_cast<uint8_t>(c)]);
      continue;
    }
    if (!unk_id_) continue;  // no unk token: HF drops the character
    if (pending_unk && !fuse_unk_) add(*unk_id_);
    pending_unk = true;
  }
  if (pending_unk) add(*unk_id_);
}

void BpeModel::merge_all(std::vector<Symbol>& symbols) const {
  std::vector<QueuedMerge> heap;
  heap.reserve(symbols.size());
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const Merge* m = find_merge(symbols[i].id, symbols[i + 1].id)) {
      heap.push_back({m->rank, static_cast<int32_t>(i), m->new_id});
    }
  }
  std::make_heap(heap.begin(), heap.end(), PopsAfter{});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), PopsAfter{});
    const QueuedMerge top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (!left.live || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    // Skip stale entries: the pair at `pos` changed since it was queued. The
    // merged token strictly grows, so comparing the result id is exact.
    const Merge* current = find_merge(left.id, right.id);
    if (current == nullptr || current->new_id != top.new_id) continue;

    left.id = top.new_id;
    right.live = false;
    left.next = right.next;
    if (left.next >= 0) symbols[static_cast<size_t>(left.next)].prev = top.pos;

    if (left.prev >= 0) {
      const Symbol& before = symbols[static_cast<size_t>(left.prev)];
      if (const Merge* m = find_merge(before.id, left.id)) {
        heap.push_back({m->rank, left.prev, m->new_id});
        std::push_heap(heap.begin(), heap.end(), PopsAfter{});
      }
    }
    if (left.next >= 0) {
      const Symbol& after = symbols[static_cast<size_t>(left.next)];
      if (const Merge* m = find_merge(left.id, after.id)) {
        heap.push_back({m->rank, top.pos, m->new_id});
        std::push_heap(heap.begin(), heap.end(), PopsAfter{});
      }
    }
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (ignore_merges_) {
    if (std::optional<int32_t> id = token_to_id(word)) {
      ids.push_back(*id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  initial_symbols(word, symbols);
  if (symbols.size() > 1) merge_all(symbols);
  for (const Symbol& s : symbols) {
    if (s.live) ids.push_back(s.id);
  }
}

}  // namespace dancemoe::tokenizer
