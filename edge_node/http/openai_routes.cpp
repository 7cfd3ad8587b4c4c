// The OpenAI-compatible routes (http_server.h): request -> validation
// (openai_request.h) -> model name, chat format, tokenization and context
// checks -> a ticket in the request queue (429 when full) -> the engine,
// streamed as server-sent events or answered as one JSON body.
//
// Everything that can be refused is refused before the ticket is taken, so
// a streamed response only starts (status 200, headers) for a request the
// engine will run. A failure of the cluster during a stream (e.g. every
// holder of an expert unreachable) ends the stream with an error event.
#include <httplib.h>

#include <memory>

#include "edge_node/http/connection_probe.h"
#include "edge_node/http/generate_json.h"
#include "edge_node/http/http_context.h"
#include "edge_node/http/openai_request.h"
#include "edge_node/http/openai_response.h"
#include "edge_node/http/sse_stream.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A request that passed every check, ready to be queued.
struct Prepared {
  Endpoint endpoint = Endpoint::kCompletions;
  HttpClock::time_point start;
  ResponseHeader header;
  GenerateRequest generate;
  int64_t prompt_tokens = 0;
  bool stream = false;
  bool include_usage = false;
  bool include_stats = false;
  std::string prompt_param;                   // "prompt" / "messages"
  std::optional<ReasoningMarkers> reasoning;  // chat with a model that thinks aloud
};

std::variant<Prepared, ApiError> prepare(HttpContext& ctx, OpenAiKind kind,
                                         const std::string& body) {
  Prepared p;
  p.start = HttpClock::now();
  p.endpoint = kind == OpenAiKind::kChat ? Endpoint::kChatCompletions : Endpoint::kCompletions;
  p.prompt_param = kind == OpenAiKind::kChat ? "messages" : "prompt";
  std::variant<OpenAiRequest, ApiError> parsed = parse_openai_request(body, kind);
  if (ApiError* e = std::get_if<ApiError>(&parsed)) return *e;
  OpenAiRequest& r = std::get<OpenAiRequest>(parsed);

  const ServedModel model = ctx.backend.served_model();
  if (!r.model.empty() && !model.answers_to(r.model)) {
    ApiError e =
        invalid_request("model",
                        "The model '" + r.model + "' does not exist on this node (it serves '" +
                            model.name + "'; see GET /v1/models)",
                        "model_not_found");
    e.http_status = 404;
    return e;
  }
  if (!model.has_tokenizer) {
    return invalid_request(p.prompt_param,
                           "this model has no tokenizer.json: send token ids to /v1/generate "
                           "(prompt_tokens)",
                           "no_tokenizer");
  }
  std::string text = r.prompt;
  bool add_special = true;
  if (kind == OpenAiKind::kChat) {
    if (!model.chat_template) {
      return invalid_request("messages",
                             "this model has no chat format (a base model: its tokenizer has no "
                             "chat template); use /v1/completions",
                             "no_chat_format");
    }
    Result<std::string> chat = model.chat_template->render(r.messages, true);
    if (!chat.is_ok()) return invalid_request("messages", chat.status().message());
    text = std::move(*chat);
    add_special = false;  // the chat text already holds the special tokens
  }
  Result<std::vector<int32_t>> tokens = ctx.backend.tokenize(text, add_special);
  if (!tokens.is_ok()) return api_error_from_status(tokens.status(), p.prompt_param);
  if (tokens->empty()) {
    return invalid_request(p.prompt_param, p.prompt_param + ": empty (no tokens)");
  }
  const int64_t n_prompt = static_cast<int64_t>(tokens->size());
  const int64_t context = model.context_tokens;
  if (n_prompt >= context) {
    return invalid_request(p.prompt_param,
                           "This model's maximum context length is " + std::to_string(context) +
                               " tokens, but the " + p.prompt_param + " has " +
                               std::to_string(n_prompt) + " tokens (no room to generate)",
                           "context_length_exceeded");
  }
  const int64_t room = context - n_prompt;
  int64_t max_tokens = r.max_tokens ? *r.max_tokens : (kind == OpenAiKind::kChat ? room : 16);
  if (!r.max_tokens) max_tokens = std::min(max_tokens, room);
  if (max_tokens > room) {
    return invalid_request(
        "max_tokens",
        "This model's maximum context length is " + std::to_string(context) + " tokens; the " +
            p.prompt_param + " has " + std::to_string(n_prompt) + " and max_tokens asks for " +
            std::to_string(max_tokens) + " more (at most " + std::to_string(room) + ")",
        "context_length_exceeded");
  }
  p.header = {kind, new_response_id(kind), unix_seconds(), model.name};
  p.generate.prompt_tokens = std::move(*tokens);
  p.generate.max_tokens = static_cast<int32_t>(max_tokens);
  p.generate.sampling = r.sampling;
  p.generate.stop = r.stop;
  p.generate.ignore_eos = r.ignore_eos;
  p.prompt_tokens = n_prompt;
  p.stream = r.stream;
  p.include_usage = r.include_usage;
  if (kind == OpenAiKind::kChat) p.reasoning = model.reasoning;
  p.include_stats = r.include_stats;
  return p;
}

void finish_metrics(HttpContext& ctx, const Prepared& p, const GenerateResponse& out) {
  ctx.metrics.add_tokens(p.endpoint, static_cast<uint64_t>(out.prompt_tokens), out.tokens.size());
  ctx.metrics.observe_latency(p.endpoint, seconds_since(p.start));
}

// One streamed request, run by httplib's content provider (after the 200
// headers). Owns the ticket; `sink` is the connection.
struct StreamJob {
  HttpContext* ctx = nullptr;
  Prepared prepared;
  std::unique_ptr<RequestQueue::Ticket> ticket;
  std::unique_ptr<ConnectionProbe> probe;

  bool run(httplib::DataSink& sink) {
    Prepared& p = prepared;
    SseStream sse(
        [&sink](std::string_view bytes) { return sink.write(bytes.data(), bytes.size()); });
    auto gone = [&] { return ctx->stopping.load() || sse.failed() || probe->closed(); };
    if (!ticket->wait_turn(gone).is_ok()) {
      ticket.reset();
      ctx->metrics.record_cancelled(p.endpoint);
      return false;
    }
    if (p.header.kind == OpenAiKind::kChat && !sse.send(chunk_json(p.header, "", "", true))) {
      ctx->metrics.record_cancelled(p.endpoint);
      return false;
    }
    bool first = true;
    std::optional<ReasoningSplitter> split;
    if (p.reasoning) split.emplace(*p.reasoning);
    p.generate.on_text = [&](std::string_view text) {
      if (first) ctx->metrics.observe_first_token(p.endpoint, seconds_since(p.start));
      first = false;
      if (!split) return sse.send(chunk_json(p.header, std::string(text), "", false));
      const ReasoningSplitter::Delta d = split->feed(text);
      return d.empty() || sse.send(chunk_json(p.header, d.content, "", false, d.reasoning));
    };
    p.generate.cancelled = gone;
    Result<GenerateResponse> out = ctx->backend.generate(p.generate);
    ticket.reset();  // the next request may start while this one says goodbye
    if (!out.is_ok()) {
      sse.send(api_error_json(api_error_from_status(out.status(), p.prompt_param)));
      sse.done();
      sink.done();
      return true;
    }
    if (out->finish_reason == "cancelled") {
      ctx->metrics.record_cancelled(p.endpoint);
      return false;
    }
    if (split) {
      const ReasoningSplitter::Delta d = split->finish();
      if (!d.empty()) sse.send(chunk_json(p.header, d.content, "", false, d.reasoning));
    }
    sse.send(chunk_json(p.header, "", out->finish_reason, false));
    if (p.include_usage) {
      sse.send(usage_chunk_json(p.header,
                                {out->prompt_tokens, static_cast<int64_t>(out->tokens.size())}));
    }
    if (p.include_stats) sse.send(stats_chunk_json(p.header, answer_stats_json(*out)));
    if (!sse.done()) {
      ctx->metrics.record_cancelled(p.endpoint);
      return false;
    }
    sink.done();
    finish_metrics(*ctx, p, *out);
    return true;
  }
};

void handle_generation(HttpContext& ctx, OpenAiKind kind, const httplib::Request& req,
                       httplib::Response& res) {
  std::variant<Prepared, ApiError> prepared = prepare(ctx, kind, req.body);
  if (ApiError* e = std::get_if<ApiError>(&prepared)) {
    send_api_error(res, *e);
    return;
  }
  Prepared& p = std::get<Prepared>(prepared);
  Result<std::unique_ptr<RequestQueue::Ticket>> ticket = ctx.queue.enqueue();
  if (!ticket.is_ok()) {
    send_api_error(res, api_error_from_status(ticket.status()));
    return;
  }
  auto probe = std::make_unique<ConnectionProbe>(req.local_addr, req.local_port, req.remote_addr,
                                                 req.remote_port);
  if (p.stream) {
    auto job = std::make_shared<StreamJob>();
    job->ctx = &ctx;
    job->prepared = std::move(p);
    job->ticket = std::move(*ticket);
    job->probe = std::move(probe);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [job](size_t, httplib::DataSink& sink) { return job->run(sink); });
    return;
  }
  auto gone = [&ctx, &probe] { return ctx.stopping.load() || probe->closed(); };
  if (!(*ticket)->wait_turn(gone).is_ok()) {
    ctx.metrics.record_cancelled(p.endpoint);
    res.status = 499;  // client closed the request; nobody reads it
    return;
  }
  bool first = true;
  p.generate.on_text = [&](std::string_view) {
    if (first) ctx.metrics.observe_first_token(p.endpoint, seconds_since(p.start));
    first = false;
    return true;
  };
  p.generate.cancelled = gone;
  Result<GenerateResponse> out = ctx.backend.generate(p.generate);
  ticket->reset();
  if (!out.is_ok()) {
    send_api_error(res, api_error_from_status(out.status(), p.prompt_param));
    return;
  }
  if (out->finish_reason == "cancelled") {
    ctx.metrics.record_cancelled(p.endpoint);
    res.status = 499;
    return;
  }
  const Usage usage{out->prompt_tokens, static_cast<int64_t>(out->tokens.size())};
  if (p.reasoning) {
    ReasoningSplitter split(*p.reasoning);
    ReasoningSplitter::Delta all = split.feed(out->text);
    const ReasoningSplitter::Delta rest = split.finish();
    send_json(res, 200,
              completion_json(p.header, all.content + rest.content, out->finish_reason, usage,
                              all.reasoning + rest.reasoning));
  } else {
    send_json(res, 200, completion_json(p.header, out->text, out->finish_reason, usage));
  }
  finish_metrics(ctx, p, *out);
}

}  // namespace

void register_openai_routes(httplib::Server& server, HttpContext& ctx) {
  server.Post("/v1/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, OpenAiKind::kCompletion, req, res);
  });
  server.Post("/v1/chat/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, OpenAiKind::kChat, req, res);
  });
  server.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
    const ServedModel m = ctx.backend.served_model();
    std::vector<std::string> names = {m.name};
    names.insert(names.end(), m.aliases.begin(), m.aliases.end());
    send_json(res, 200, models_json(names, m.created_unix));
  });
  server.Get(R"(/v1/models/(.+))", [&ctx](const httplib::Request& req, httplib::Response& res) {
    const ServedModel m = ctx.backend.served_model();
    const std::string wanted = req.matches[1];
    if (!m.answers_to(wanted)) {
      ApiError e =
          invalid_request("model", "The model '" + wanted + "' does not exist", "model_not_found");
      e.http_status = 404;
      send_api_error(res, e);
      return;
    }
    send_json(res, 200, models_json({wanted}, m.created_unix)["data"][0]);
  });
}

}  // namespace dancemoe::node
