#include "common/tokenizer/post_processor.h"

#include "common/base/json_field.h"
#include "common/tokenizer/bpe_model.h"

namespace dancemoe::tokenizer {

Result<std::unique_ptr<PostProcessor>> PostProcessor::parse(const JsonField& field) {
  auto processor = std::unique_ptr<PostProcessor>(new PostProcessor());
  DMOE_RETURN_IF_ERROR(parse_into(field, processor->items_, processor->has_template_));
  return processor;
}

Status PostProcessor::parse_into(const JsonField& field, std::vector<Item>& items,
                                 bool& has_template) {
  DMOE_ASSIGN_OR_RETURN(JsonField type_field, field.member("type"));
  DMOE_ASSIGN_OR_RETURN(std::string_view type, type_field.as_string_view());
  if (type == "ByteLevel") return Status::ok();
  if (type == "Sequence") {
    DMOE_ASSIGN_OR_RETURN(JsonField list, field.member("processors"));
    DMOE_RETURN_IF_ERROR(list.expect_array());
    for (size_t i = 0; i < list.json().size(); ++i) {
      DMOE_RETURN_IF_ERROR(parse_into(list.element(i), items, has_template));
    }
    return Status::ok();
  }
  if (type == "TemplateProcessing") {
    if (has_template) return field.error("more than one TemplateProcessing in a Sequence");
    has_template = true;
    return parse_template(field, items);
  }
  return type_field.unsupported(type, "ByteLevel, Sequence, TemplateProcessing");
}

Status PostProcessor::parse_template(const JsonField& field, std::vector<Item>& items) {
  DMOE_ASSIGN_OR_RETURN(JsonField single, field.member("single"));
  DMOE_RETURN_IF_ERROR(single.expect_array());
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> specials, field.optional_member("special_tokens"));
  bool has_sequence = false;
  for (size_t i = 0; i < single.json().size(); ++i) {
    const JsonField item = single.element(i);
    DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> sequence, item.optional_member("Sequence"));
    if (sequence) {
      DMOE_ASSIGN_OR_RETURN(std::string id, sequence->required_string("id"));
      if (id != "A") {
        DMOE_ASSIGN_OR_RETURN(JsonField id_field, sequence->member("id"));
        return id_field.error("the single-sequence template can only use sequence \"A\", found " +
                              json_quote(id));
      }
      items.push_back({true, {}});
      has_sequence = true;
      continue;
    }
    DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> special, item.optional_member("SpecialToken"));
    if (!special) return item.error("expected a \"Sequence\" or \"SpecialToken\" item");
    DMOE_ASSIGN_OR_RETURN(std::string name, special->required_string("id"));
    if (!specials)
      return item.error("refers to special token " + json_quote(name) +
                        " but the template has no special_tokens");
    DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> entry, specials->optional_member(name));
    if (!entry) {
      return special->error("special token " + json_quote(name) +
                            " is not defined in special_tokens");
    }
    DMOE_ASSIGN_OR_RETURN(JsonField ids_field, entry->member("ids"));
    DMOE_RETURN_IF_ERROR(ids_field.expect_array());
    Item special_item{false, {}};
    for (size_t k = 0; k < ids_field.json().size(); ++k) {
      DMOE_ASSIGN_OR_RETURN(int64_t id, ids_field.element(k).as_int());
      if (id < 0 || id > BpeModel::kMaxTokenId) {
        return ids_field.element(k).error("token id out of range: " + std::to_string(id));
      }
      special_item.ids.push_back(static_cast<int32_t>(id));
    }
    items.push_back(std::move(special_item));
  }
  if (!has_sequence) return single.error("the template does not contain the sequence \"A\"");
  return Status::ok();
}

std::vector<int32_t> PostProcessor::process(std::vector<int32_t> ids) const {
  if (!has_template_) return ids;
  std::vector<int32_t> out;
  out.reserve(ids.size() + items_.size());
  for (const Item& item : items_) {
    const std::vector<int32_t>& part = item.is_sequence ? ids : item.ids;
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::vector<int32_t> PostProcessor::special_ids() const {
  std::vector<int32_t> ids;
  for (const Item& item : items_) ids.insert(ids.end(), item.ids.begin(), item.ids.end());
  return ids;
}

}  // namespace dancemoe::tokenizer
