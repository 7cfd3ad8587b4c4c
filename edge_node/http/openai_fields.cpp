#include "edge_node/http/openai_fields.h"

#include <algorithm>
#include <iterator>

namespace dancemoe::node {
namespace {

// Both endpoints: OpenAI's, then vLLM's and llama-server's extensions.
constexpr std::string_view kIgnoredAnywhere[] = {
    "metadata",
    "store",
    "service_tier",
    "safety_identifier",
    "prompt_cache_key",
    "functions",
    "function_call",
    // vLLM
    "min_tokens",
    "stop_token_ids",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "include_stop_str_in_output",
    "truncate_prompt_tokens",
    "prompt_logprobs",
    "priority",
    "request_id",
    "guided_decoding_backend",
    "guided_whitespace_pattern",
    "cache_salt",
    "return_tokens_as_token_ids",
    "length_penalty",
    "add_special_tokens",
    "documents",
    "logits_processors",
    "kv_transfer_params",
    "vllm_xargs",
    // llama-server
    "cache_prompt",
    "id_slot",
    "n_keep",
    "n_indent",
    "t_max_predict_ms",
    "timings_per_token",
    "post_sampling_probs",
    "return_tokens",
    "n_probs",
    "typical_p",
    "tfs_z",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "dynatemp_range",
    "dynatemp_exponent",
    "repeat_last_n",
    "penalize_nl",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "dry_sequence_breakers",
    "xtc_probability",
    "xtc_threshold",
    "samplers",
};

constexpr std::string_view kIgnoredInChat[] = {
    "modalities",
    "audio",
    "prediction",
    "verbosity",
    "web_search_options",
    // vLLM
    "add_generation_prompt",
    "continue_final_message",
    "chat_template",
    "mm_processor_kwargs",
};

constexpr std::string_view kIgnoredInCompletions[] = {
    "suffix",
    // chat's (openai_tools.h); a prompt has no template to render them
    "tools",
    "tool_choice",
    "parallel_tool_calls",
};

constexpr std::string_view kRefused[] = {
    "guided_regex",      "guided_choice", "guided_grammar",  "structural_tag",  "grammar",
    "allowed_token_ids", "bad_words",     "use_beam_search", "logit_bias_type",
};

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view field) {
  return std::find(std::begin(list), std::end(list), field) != std::end(list);
}

}  // namespace

bool is_ignored_field(std::string_view field, OpenAiKind kind) {
  return contains(kIgnoredAnywhere, field) ||
         (kind == OpenAiKind::kChat ? contains(kIgnoredInChat, field)
                                    : contains(kIgnoredInCompletions, field));
}

bool is_refused_field(std::string_view field) { return contains(kRefused, field); }

}  // namespace dancemoe::node
