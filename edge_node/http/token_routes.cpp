// POST /tokenize and POST /detokenize, as llama-server has them (clients
// use them to count tokens and to show token boundaries):
//
//   /tokenize    {"content": str, "add_special": bool = false,
//                 "with_pieces": bool = false}
//                -> {"tokens": [id...]} or, with pieces,
//                   {"tokens": [{"id", "piece": str | [byte...]}...]}
//                   (a piece that is not whole UTF-8 is its bytes)
//   /detokenize  {"tokens": [id...]} -> {"content": str}
//
// "parse_special" is accepted (true is what the tokenizer does; false is
// refused). Texts of more than max(context, 65536) tokens are refused
// before they are tokenized in full (prompt_tokens.h). Errors are OpenAI
// errors naming the field.
#include <httplib.h>

#include <limits>

#include "common/base/json_nesting.h"
#include "common/base/json_preview.h"
#include "common/tokenizer/utf8.h"
#include "edge_node/http/http_context.h"
#include "edge_node/http/prompt_tokens.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

std::string piece_text(Result<std::string> text) {
  return text.is_ok() ? std::move(*text) : std::string();
}

constexpr size_t kMinTokenizeLimit = 65536;

// The body as a JSON object, or the error to answer.
std::variant<json, ApiError> body_object(const httplib::Request& req) {
  if (Status deep = check_json_nesting(req.body, "the request body"); !deep.is_ok()) {
    return invalid_request("", deep.message(), "invalid_json");
  }
  json root = json::parse(req.body, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return invalid_request("", "the request body is not a JSON object", "invalid_json");
  }
  return root;
}

ApiError token_field_error(const std::string& field, const std::string& what, const json& got) {
  return invalid_request(field, field + ": expected " + what + ", got " + json_preview(got),
                         "invalid_type");
}

std::variant<json, ApiError> tokenize(HttpContext& ctx, const json& body) {
  std::string content;
  bool add_special = false;
  bool with_pieces = false;
  bool has_content = false;
  for (const auto& [key, value] : body.items()) {
    if (key == "content") {
      if (!value.is_string()) return token_field_error(key, "a string", value);
      content = value.get<std::string>();
      has_content = true;
    } else if (key == "add_special" || key == "with_pieces" || key == "parse_special") {
      if (!value.is_boolean()) return token_field_error(key, "true or false", value);
      if (key == "parse_special" && !value.get<bool>()) {
        return invalid_request(key, "parse_special: false is not supported");
      }
      if (key == "add_special") add_special = value.get<bool>();
      if (key == "with_pieces") with_pieces = value.get<bool>();
    } else {
      return invalid_request(key, "unknown field '" + key + "'", "unknown_parameter");
    }
  }
  if (!has_content) return invalid_request("content", "content: missing", "missing_required");
  const ServedModel model = ctx.backend.served_model();
  const size_t limit =
      std::max(kMinTokenizeLimit, static_cast<size_t>(std::max<int64_t>(model.context_tokens, 0)));
  Result<PromptTokens> tokens = tokenize_within(content, limit, [&](const std::string& text) {
    return ctx.backend.tokenize(text, add_special);
  });
  if (!tokens.is_ok()) return api_error_from_status(tokens.status(), "content");
  if (!tokens->complete) {
    return invalid_request("content", "content: at least " + std::to_string(tokens->at_least) +
                                          " tokens, more than this node tokenizes at once (" +
                                          std::to_string(limit) + ")");
  }
  json out = json::array();
  for (int32_t id : tokens->ids) {
    if (!with_pieces) {
      out.push_back(id);
      continue;
    }
    const std::string bytes = ctx.backend.token_bytes(id);
    json piece;
    if (bytes.empty()) {  // a special token: its text
      const int32_t one[1] = {id};
      piece = piece_text(ctx.backend.detokenize(one, false));
    } else if (tokenizer::utf8_make_valid(bytes) == bytes) {
      piece = bytes;
    } else {
      piece = json::array();
      for (char c : bytes) piece.push_back(static_cast<int>(static_cast<unsigned char>(c)));
    }
    out.push_back({{"id", id}, {"piece", std::move(piece)}});
  }
  return json{{"tokens", std::move(out)}};
}

std::variant<json, ApiError> detokenize(HttpContext& ctx, const json& body) {
  std::vector<int32_t> ids;
  bool has_tokens = false;
  const int32_t vocab = ctx.backend.served_model().vocab_size;
  for (const auto& [key, value] : body.items()) {
    if (key != "tokens") {
      return invalid_request(key, "unknown field '" + key + "'", "unknown_parameter");
    }
    if (!value.is_array()) return token_field_error(key, "a list of token ids", value);
    for (const json& id : value) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
        return token_field_error(key, "token ids in [0, " + std::to_string(vocab) + ")", id);
      }
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    has_tokens = true;
  }
  if (!has_tokens) return invalid_request("tokens", "tokens: missing", "missing_required");
  Result<std::string> text = ctx.backend.detokenize(ids, false);
  if (!text.is_ok()) return api_error_from_status(text.status(), "tokens");
  return json{{"content", std::move(*text)}};
}

template <typename Handler>
void answer(HttpContext& ctx, const httplib::Request& req, httplib::Response& res,
            Handler handler) {
  std::variant<json, ApiError> body = body_object(req);
  if (ApiError* e = std::get_if<ApiError>(&body)) return send_api_error(res, *e);
  if (!ctx.backend.served_model().has_tokenizer) {
    return send_api_error(res,
                          invalid_request("", "this model has no tokenizer.json", "no_tokenizer"));
  }
  std::variant<json, ApiError> out = handler(ctx, std::get<json>(body));
  if (ApiError* e = std::get_if<ApiError>(&out)) return send_api_error(res, *e);
  send_json(res, 200, std::get<json>(out));
}

}  // namespace

void register_token_routes(httplib::Server& server, HttpContext& ctx) {
  server.Post("/tokenize", [&ctx](const httplib::Request& req, httplib::Response& res) {
    answer(ctx, req, res, tokenize);
  });
  server.Post("/detokenize", [&ctx](const httplib::Request& req, httplib::Response& res) {
    answer(ctx, req, res, detokenize);
  });
}

}  // namespace dancemoe::node
