#include "edge_node/http/generate_json.h"

#include <cmath>
#include <limits>

#include "common/base/json_nesting.h"
#include "common/base/json_preview.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

Status expected_status(std::string_view field, std::string_view what, const json& got) {
  return invalid_argument(std::string(field) + ": expected " + std::string(what) + ", got " +
                          json_preview(got));
}

}  // namespace

Result<GenerateRequest> parse_generate_request(std::string_view body) {
  DMOE_RETURN_IF_ERROR(check_json_nesting(body, "request body"));
  json root = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return invalid_argument("request body is not valid JSON");
  if (!root.is_object()) return expected_status("(body)", "a JSON object", root);
  GenerateRequest r;
  for (const auto& [key, value] : root.items()) {
    if (key == "prompt") {
      if (!value.is_string()) return expected_status(key, "a string", value);
      r.prompt = value.get<std::string>();
    } else if (key == "prompt_tokens") {
      if (!value.is_array()) return expected_status(key, "a list of token ids", value);
      std::vector<int32_t> ids;
      for (const json& id : value) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
          return expected_status(key, "non-negative integer token ids", id);
        }
        ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
      r.prompt_tokens = std::move(ids);
    } else if (key == "max_tokens") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
          value.get<int64_t>() > 1'000'000) {
        return expected_status(key, "an integer in 1..1000000", value);
      }
      r.max_tokens = static_cast<int32_t>(value.get<int64_t>());
    } else if (key == "temperature" || key == "top_p") {
      if (!value.is_number() || !std::isfinite(value.get<double>())) {
        return expected_status(key, "a number", value);
      }
      (key == "temperature" ? r.sampling.temperature : r.sampling.top_p) = value.get<float>();
    } else if (key == "top_k") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
          value.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return expected_status(key, "a non-negative integer", value);
      }
      r.sampling.top_k = static_cast<int32_t>(value.get<int64_t>());
    } else if (key == "seed") {
      if (!value.is_number_unsigned() &&
          !(value.is_number_integer() && value.get<int64_t>() >= 0)) {
        return expected_status(key, "a non-negative integer", value);
      }
      r.sampling.seed = value.get<uint64_t>();
    } else if (key == "ignore_eos" || key == "return_logits") {
      if (!value.is_boolean()) return expected_status(key, "true or false", value);
      (key == "ignore_eos" ? r.ignore_eos : r.return_logits) = value.get<bool>();
    } else if (key == "stop") {
      if (value.is_string()) {
        r.stop.push_back(value.get<std::string>());
      } else if (value.is_array()) {
        for (const json& s : value) {
          if (!s.is_string()) return expected_status(key, "a string or a list of strings", value);
          r.stop.push_back(s.get<std::string>());
        }
      } else {
        return expected_status(key, "a string or a list of strings", value);
      }
    } else {
      return invalid_argument(
          "unknown field '" + key +
          "' (known: prompt, prompt_tokens, max_tokens, temperature, top_k, top_p, seed, "
          "ignore_eos, stop, return_logits)");
    }
  }
  if (root.contains("prompt") == r.prompt_tokens.has_value()) {
    return invalid_argument("give exactly one of \"prompt\" (text) or \"prompt_tokens\" (ids)");
  }
  DMOE_RETURN_IF_ERROR(r.sampling.validate());
  return r;
}

json answer_stats_json(const GenerateResponse& r) {
  const size_t n_decoded = r.tokens.empty() ? 0 : r.tokens.size() - 1;
  const ServedCounts& c = r.served;
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.tokens.size()},
          {"prefill_ms", r.prefill_ms},
          {"decode_ms", r.decode_ms},
          {"decode_tokens_per_s",
           r.decode_ms > 0 ? static_cast<double>(n_decoded) * 1e3 / r.decode_ms : 0.0},
          {"activations",
           {{"total", c.activations},
            {"local", c.local},
            {"remote", c.remote},
            {"offloaded", c.offloaded}}},
          {"local_share", c.activations > 0 ? json(static_cast<double>(c.local) /
                                                   static_cast<double>(c.activations))
                                            : json(nullptr)},
          {"remote_calls", c.remote_calls},
          {"remote_failures", c.remote_failures}};
}

json generate_response_json(const GenerateResponse& r) {
  const json stats = answer_stats_json(r);
  json out;
  out["text"] = r.text;
  out["tokens"] = r.tokens;
  out["prompt_tokens"] = r.prompt_tokens;
  out["finish_reason"] = r.finish_reason;
  out["activations"] = stats["activations"];
  out["steps"] = {{"total", r.served.steps}, {"local", r.served.local_steps}};
  out["remote_bytes"] = r.served.remote_bytes;
  out["remote_calls"] = stats["remote_calls"];
  out["remote_failures"] = stats["remote_failures"];
  out["prefill_ms"] = stats["prefill_ms"];
  out["decode_ms"] = stats["decode_ms"];
  out["step_ms"] = r.step_ms;
  out["decode_tokens_per_s"] = stats["decode_tokens_per_s"];
  if (!r.logits.empty()) out["logits"] = r.logits;
  return out;
}

}  // namespace dancemoe::node
