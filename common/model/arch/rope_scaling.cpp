// config.json's rope_scaling (or rope_parameters, as newer transformers
// write it) -> RopeScaling. The types and keys are those of HF transformers'
// modeling_rope_utils: "linear" (factor), "yarn" (factor, beta_fast,
// beta_slow, mscale, mscale_all_dim, attention_factor,
// original_max_position_embeddings, truncate), "llama3" (factor,
// low_freq_factor, high_freq_factor, original_max_position_embeddings);
// "default" or null is no scaling. The type may be spelled "type" (older
// configs) or "rope_type". Anything else -- another type, or a key the type
// does not define -- is refused naming it and what is supported, rather than
// silently computing a different model.
#include <set>
#include <string>

#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Status check_keys(const JsonField& s, const std::string& type, std::set<std::string> allowed) {
  allowed.insert({"type", "rope_type", "rope_theta", "partial_rotary_factor"});
  for (const auto& [key, value] : s.json().items()) {
    if (allowed.count(key) == 0) {
      return s.error("key \"" + key + "\" is not defined for rope type \"" + type +
                     "\" (supported keys: " + join(allowed) + ")");
    }
  }
  return Status::ok();
}

}  // namespace

Status read_rope_scaling(const JsonField& f, ModelConfig* c) {
  const char* key = f.has("rope_scaling") ? "rope_scaling" : "rope_parameters";
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> s, f.optional_member(key));
  if (!s) return Status::ok();
  DMOE_RETURN_IF_ERROR(s->expect_object());
  if (s->has("rope_theta")) {
    DMOE_ASSIGN_OR_RETURN(c->rope_theta, s->finite_positive("rope_theta"));
  }
  std::string type = "default";
  if (s->has("rope_type")) {
    DMOE_ASSIGN_OR_RETURN(type, s->required_string("rope_type"));
  } else if (s->has("type")) {
    DMOE_ASSIGN_OR_RETURN(type, s->required_string("type"));
  }
  RopeScaling& r = c->rope_scaling;
  auto original_max = [&]() -> Status {
    DMOE_ASSIGN_OR_RETURN(r.original_max_position_embeddings,
                          s->int_in_or("original_max_position_embeddings", 1, int64_t{1} << 24,
                                       c->max_position_embeddings));
    return Status::ok();
  };
  if (type == "default") {
    DMOE_RETURN_IF_ERROR(check_keys(*s, type, {}));
    r.type = RopeScaling::Type::kNone;
  } else if (type == "linear") {
    DMOE_RETURN_IF_ERROR(check_keys(*s, type, {"factor"}));
    r.type = RopeScaling::Type::kLinear;
    DMOE_ASSIGN_OR_RETURN(r.factor, s->finite_positive("factor"));
  } else if (type == "yarn") {
    DMOE_RETURN_IF_ERROR(
        check_keys(*s, type,
                   {"factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                    "attention_factor", "original_max_position_embeddings", "truncate"}));
    r.type = RopeScaling::Type::kYarn;
    DMOE_ASSIGN_OR_RETURN(r.factor, s->finite_positive("factor"));
    DMOE_ASSIGN_OR_RETURN(r.beta_fast, s->finite_positive_or("beta_fast", 32.0));
    DMOE_ASSIGN_OR_RETURN(r.beta_slow, s->finite_positive_or("beta_slow", 1.0));
    DMOE_ASSIGN_OR_RETURN(r.mscale, s->finite_non_negative_or("mscale", 0.0));
    DMOE_ASSIGN_OR_RETURN(r.mscale_all_dim, s->finite_non_negative_or("mscale_all_dim", 0.0));
    DMOE_ASSIGN_OR_RETURN(r.attention_factor, s->finite_non_negative_or("attention_factor", 0.0));
    DMOE_ASSIGN_OR_RETURN(r.truncate, s->bool_or("truncate", true));
    DMOE_RETURN_IF_ERROR(original_max());
  } else if (type == "llama3") {
    DMOE_RETURN_IF_ERROR(check_keys(
        *s, type,
        {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}));
    r.type = RopeScaling::Type::kLlama3;
    DMOE_ASSIGN_OR_RETURN(r.factor, s->finite_positive("factor"));
    DMOE_ASSIGN_OR_RETURN(r.low_freq_factor, s->finite_positive("low_freq_factor"));
    DMOE_ASSIGN_OR_RETURN(r.high_freq_factor, s->finite_positive("high_freq_factor"));
    if (r.high_freq_factor <= r.low_freq_factor) {
      return s->member_error("high_freq_factor", "a number above low_freq_factor");
    }
    DMOE_ASSIGN_OR_RETURN(r.original_max_position_embeddings,
                          s->int_in("original_max_position_embeddings", 1, int64_t{1} << 24));
  } else {
    DMOE_ASSIGN_OR_RETURN(JsonField t, s->member(s->has("rope_type") ? "rope_type" : "type"));
    return t.unsupported(type, "default, linear, yarn, llama3");
  }
  return Status::ok();
}

}  // namespace dancemoe::arch
