#include "edge_node/http/openai_logprobs.h"

#include <cmath>

namespace dancemoe::node {
namespace {

using nlohmann::json;

json byte_list(const std::string& bytes) {
  json out = json::array();
  for (char c : bytes) out.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return out;
}

// JSON has no -infinity: a masked alternative is shown as OpenAI does, -9999.
double finite(float logprob) { return std::isfinite(logprob) ? logprob : -9999.0; }

}  // namespace

json chat_logprobs_json(std::span<const TokenLogprobs> tokens, const TokenNamer& names) {
  json content = json::array();
  for (const TokenLogprobs& t : tokens) {
    json top = json::array();
    for (const TokenChoice& alt : t.top) {
      top.push_back({{"token", names.text(alt.id)},
                     {"logprob", finite(alt.logprob)},
                     {"bytes", byte_list(names.bytes(alt.id))}});
    }
    content.push_back({{"token", names.text(t.id)},
                       {"logprob", finite(t.logprob)},
                       {"bytes", byte_list(names.bytes(t.id))},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs_json(std::span<const TokenLogprobs> tokens, const TokenNamer& names,
                              int64_t* text_offset) {
  json out = {{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  for (const TokenLogprobs& t : tokens) {
    const std::string text = names.text(t.id);
    out["tokens"].push_back(text);
    out["token_logprobs"].push_back(finite(t.logprob));
    json top = json::object();
    for (const TokenChoice& alt : t.top) top[names.text(alt.id)] = finite(alt.logprob);
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(*text_offset);
    *text_offset += static_cast<int64_t>(text.size());
  }
  return out;
}

}  // namespace dancemoe::node
