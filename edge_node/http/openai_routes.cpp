// The OpenAI-compatible routes (http_server.h): request -> validation
// (openai_request.h) -> model name, chat format, tokenization and context
// checks -> a ticket in the request queue (429 when full) -> the engine,
// streamed as server-sent events or answered as one JSON body.
//
// A request asks for one or more choices: each prompt (completions may
// send several) times n. They run one after another on the one ticket, each
// with its own seed (the request's seed + the choice's index); a stream
// sends each choice's chunks in turn, tagged with its index.
//
// A chat is rendered by the model's own template with the request's tools
// (openai_tools.h; a forced call ends the prompt with the call's opening),
// and each answer is split into content, reasoning and tool calls as it
// streams (chat_answer.h).
//
// Everything that can be refused is refused before the ticket is taken, so
// a streamed response only starts (status 200, headers) for a request the
// engine will run. A failure of the cluster during a stream (e.g. every
// holder of an expert unreachable) ends the stream with an error event.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "edge_node/http/chat_answer.h"
#include "edge_node/http/connection_probe.h"
#include "edge_node/http/generate_json.h"
#include "edge_node/http/http_context.h"
#include "edge_node/http/openai_logprobs.h"
#include "edge_node/http/openai_request.h"
#include "edge_node/http/openai_response.h"
#include "edge_node/http/openai_tools.h"
#include "edge_node/http/prompt_tokens.h"
#include "edge_node/http/sse_stream.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

std::string text_or_empty(Result<std::string> text) {
  return text.is_ok() ? std::move(*text) : std::string();
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One choice to generate.
struct Job {
  int32_t index = 0;
  GenerateRequest generate;
  std::string echo;  // completions with echo: the prompt's text, before the answer
};

// A request that passed every check, ready to be queued.
struct Prepared {
  Endpoint endpoint = Endpoint::kCompletions;
  HttpClock::time_point start;
  ResponseHeader header;
  std::vector<Job> jobs;
  int64_t prompt_tokens = 0;  // each prompt counted once
  bool stream = false;
  bool include_usage = false;
  bool include_stats = false;
  bool logprobs = false;
  std::string prompt_param;  // "prompt" / "messages"
  ChatAnswerOptions answer;  // chat: how each answer is split
  bool tools = false;        // chat with tools: an empty content is null, as OpenAI's
};

// A chat's prompt text: the template's rendering of the messages and
// tools, and the opening of a forced call. Sets how answers are split.
std::variant<std::string, ApiError> chat_prompt(const ServedModel& model, OpenAiRequest& r,
                                                ChatAnswerOptions* answer) {
  const tokenizer::ChatTemplate& tmpl = *model.chat_template;
  const tokenizer::ToolCallFormat format = tmpl.tool_call_format();
  if (r.tools.active() && !tmpl.supports_tools()) {
    return invalid_request("tools",
                           "tools: this model's chat template (" + std::string(tmpl.format_name()) +
                               ") does not render tools, so the model cannot call them; send "
                               "the request without tools (or with tool_choice \"none\")",
                           "tools_unsupported");
  }
  std::variant<std::optional<ForcedToolCall>, ApiError> forced = forced_tool_call(format, r.tools);
  if (ApiError* e = std::get_if<ApiError>(&forced)) return *e;
  const std::optional<ForcedToolCall>& call = std::get<std::optional<ForcedToolCall>>(forced);
  if (call && call->prefix.empty()) {
    return invalid_request("tool_choice",
                           "tool_choice: this model's chat template renders tools, but its tool "
                           "call format is not one this node can parse; use \"auto\" or "
                           "\"none\"");
  }
  if (call && call->grammar && r.grammar) {
    return invalid_request("tool_choice",
                           "tool_choice and response_format both constrain the output: send one");
  }
  tokenizer::ChatRequest request;
  request.messages = r.messages;
  if (r.tools.active()) request.tools = r.tools.tools;
  request.kwargs = r.chat_template_kwargs;
  Result<std::string> text = tmpl.render(request);
  if (!text.is_ok()) return invalid_request("messages", text.status().message());
  answer->parse = r.tools.active() || format == tokenizer::ToolCallFormat::kHarmony;
  answer->format = format;
  // gpt-oss says its reasoning in a channel: the parser splits it.
  if (format != tokenizer::ToolCallFormat::kHarmony) answer->reasoning = model.reasoning;
  if (r.tools.active()) {
    answer->tools = r.tools.tools;
    if (!r.tools.parallel) answer->max_tool_calls = 1;
  }
  if (call) {
    *text += call->prefix;
    answer->forced_prefix = call->prefix;
    answer->forced_suffix = call->suffix;
    if (call->grammar) {
      r.grammar = call->grammar;
      r.grammar_field = "tool_choice";
    }
  }
  return std::move(*text);
}

ApiError too_long(const std::string& param, int64_t context, const std::string& count) {
  return invalid_request(param,
                         "This model's maximum context length is " + std::to_string(context) +
                             " tokens, but the " + param + " has " + count +
                             " tokens (no room to generate)",
                         "context_length_exceeded");
}

// The tokens of one prompt, refused when they cannot fit (checked before
// the whole text is tokenized: prompt_tokens.h).
std::variant<std::vector<int32_t>, ApiError> prompt_ids(HttpContext& ctx, const ServedModel& model,
                                                        const PromptInput& prompt, bool add_special,
                                                        const std::string& param) {
  std::vector<int32_t> ids;
  if (prompt.tokens) {
    ids = *prompt.tokens;
    for (int32_t id : ids) {
      if (id >= model.vocab_size) {
        return invalid_request(param, param + ": token id " + std::to_string(id) +
                                          " is outside the vocabulary [0, " +
                                          std::to_string(model.vocab_size) + ")");
      }
    }
  } else {
    if (!model.has_tokenizer) {
      return invalid_request(param,
                             "this model has no tokenizer.json: send token ids (a list of "
                             "integers as the prompt, or prompt_tokens to /v1/generate)",
                             "no_tokenizer");
    }
    const size_t limit = static_cast<size_t>(std::max<int64_t>(model.context_tokens - 1, 0));
    Result<PromptTokens> tokens = tokenize_within(prompt.text, limit, [&](const std::string& text) {
      return ctx.backend.tokenize(text, add_special);
    });
    if (!tokens.is_ok()) return api_error_from_status(tokens.status(), param);
    if (!tokens->complete) {
      return too_long(param, model.context_tokens, "at least " + std::to_string(tokens->at_least));
    }
    ids = std::move(tokens->ids);
  }
  if (ids.empty()) return invalid_request(param, param + ": empty (no tokens)");
  if (static_cast<int64_t>(ids.size()) >= model.context_tokens) {
    return too_long(param, model.context_tokens, std::to_string(ids.size()));
  }
  return ids;
}

std::variant<Prepared, ApiError> prepare(HttpContext& ctx, OpenAiKind kind,
                                         const std::string& body) {
  Prepared p;
  p.start = HttpClock::now();
  p.endpoint = kind == OpenAiKind::kChat ? Endpoint::kChatCompletions : Endpoint::kCompletions;
  p.prompt_param = kind == OpenAiKind::kChat ? "messages" : "prompt";
  std::variant<OpenAiRequest, ApiError> parsed = parse_openai_request(body, kind);
  if (ApiError* e = std::get_if<ApiError>(&parsed)) return *e;
  OpenAiRequest& r = std::get<OpenAiRequest>(parsed);
  if (!r.ignored.empty()) {
    std::string names;
    for (const std::string& f : r.ignored) names += (names.empty() ? "" : ", ") + f;
    spdlog::warn("{}: ignoring fields this node does not implement: {}",
                 kind == OpenAiKind::kChat ? "/v1/chat/completions" : "/v1/completions", names);
  }

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
  for (const auto& [id, bias] : r.sampling.logit_bias) {
    if (id >= model.vocab_size) {
      return invalid_request("logit_bias", "logit_bias: token id " + std::to_string(id) +
                                               " is outside the vocabulary [0, " +
                                               std::to_string(model.vocab_size) + ")");
    }
  }
  if ((r.grammar || r.n_logprobs >= 0) && !model.has_tokenizer) {
    return invalid_request(r.grammar ? r.grammar_field : "logprobs",
                           "this model has no tokenizer.json", "no_tokenizer");
  }
  std::vector<PromptInput> prompts = r.prompts;
  bool add_special = true;
  if (kind == OpenAiKind::kChat) {
    if (!model.has_tokenizer) {
      return invalid_request("messages", "this model has no tokenizer.json", "no_tokenizer");
    }
    if (!model.chat_template) {
      return invalid_request("messages",
                             "this model has no chat format (a base model: its tokenizer has no "
                             "chat template); use /v1/completions",
                             "no_chat_format");
    }
    std::variant<std::string, ApiError> chat = chat_prompt(model, r, &p.answer);
    p.tools = r.tools.active();
    if (ApiError* e = std::get_if<ApiError>(&chat)) return *e;
    prompts = {PromptInput{std::move(std::get<std::string>(chat)), std::nullopt}};
    add_special = false;  // the chat text already holds the special tokens
  }
  p.header = {kind, new_response_id(kind), unix_seconds(), model.name};
  const int64_t context = model.context_tokens;
  for (size_t prompt_idx = 0; prompt_idx < prompts.size(); ++prompt_idx) {
    const std::string param =
        prompts.size() > 1 ? "prompt[" + std::to_string(prompt_idx) + "]" : p.prompt_param;
    std::variant<std::vector<int32_t>, ApiError> ids =
        prompt_ids(ctx, model, prompts[prompt_idx], add_special, param);
    if (ApiError* e = std::get_if<ApiError>(&ids)) return *e;
    std::vector<int32_t>& tokens = std::get<std::vector<int32_t>>(ids);
    const auto n_prompt = static_cast<int64_t>(tokens.size());
    const int64_t room = context - n_prompt;
    int64_t max_tokens = r.max_tokens ? *r.max_tokens : (kind == OpenAiKind::kChat ? room : 16);
    if (!r.max_tokens) max_tokens = std::min(max_tokens, room);
    if (max_tokens > room) {
      return invalid_request("max_tokens",
                             "This model's maximum context length is " + std::to_string(context) +
                                 " tokens; the " + param + " has " + std::to_string(n_prompt) +
                                 " and max_tokens asks for " + std::to_string(max_tokens) +
                                 " more (at most " + std::to_string(room) + ")",
                             "context_length_exceeded");
    }
    std::string echo;
    if (r.echo) {
      if (prompts[prompt_idx].tokens) {
        Result<std::string> text = ctx.backend.detokenize(tokens, false);
        if (!text.is_ok()) return api_error_from_status(text.status(), "echo");
        echo = std::move(*text);
      } else {
        echo = prompts[prompt_idx].text;
      }
    }
    p.prompt_tokens += n_prompt;
    for (int32_t i = 0; i < r.n; ++i) {
      Job job;
      job.index = static_cast<int32_t>(prompt_idx) * r.n + i;
      job.echo = echo;
      job.generate.prompt_tokens = tokens;
      job.generate.max_tokens = static_cast<int32_t>(max_tokens);
      job.generate.sampling = r.sampling;
      job.generate.sampling.seed = r.sampling.seed + static_cast<uint64_t>(job.index);
      job.generate.stop = r.stop;
      job.generate.ignore_eos = r.ignore_eos;
      job.generate.n_logprobs = r.n_logprobs;
      job.generate.grammar = r.grammar;
      job.generate.grammar_field = r.grammar_field;
      job.generate.skip_special_tokens = !p.answer.keeps_special_tokens();
      p.jobs.push_back(std::move(job));
    }
  }
  p.stream = r.stream;
  p.include_usage = r.include_usage;
  p.include_stats = r.include_stats;
  p.logprobs = r.n_logprobs >= 0;
  return p;
}

TokenNamer namer(HttpContext& ctx) {
  return {[&ctx](int32_t id) {
            const int32_t one[1] = {id};
            return text_or_empty(ctx.backend.detokenize(one, false));
          },
          [&ctx](int32_t id) { return ctx.backend.token_bytes(id); }};
}

json logprobs_json(HttpContext& ctx, OpenAiKind kind, std::span<const TokenLogprobs> tokens,
                   int64_t* text_offset) {
  return kind == OpenAiKind::kChat ? chat_logprobs_json(tokens, namer(ctx))
                                   : completion_logprobs_json(tokens, namer(ctx), text_offset);
}

void finish_metrics(HttpContext& ctx, const Prepared& p, uint64_t prompt_tokens,
                    uint64_t completion_tokens) {
  ctx.metrics.add_tokens(p.endpoint, prompt_tokens, completion_tokens);
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
    const OpenAiKind kind = p.header.kind;
    bool first_token = true;
    Usage usage{p.prompt_tokens, 0};
    std::vector<json> stats;
    for (Job& job : p.jobs) {
      Choice part;
      part.index = job.index;
      if (kind == OpenAiKind::kChat && !sse.send(chunk_json(p.header, part, true))) {
        ctx->metrics.record_cancelled(p.endpoint);
        return false;
      }
      if (!job.echo.empty()) {
        part.text = job.echo;
        if (!sse.send(chunk_json(p.header, part, false))) return false;
        part.text.clear();
      }
      std::optional<ChatAnswer> answer;
      if (kind == OpenAiKind::kChat) answer.emplace(p.answer);
      size_t calls_sent = 0;
      // A chunk of what the answer decided (content, reasoning, whole calls).
      auto answer_chunk = [&](tokenizer::ModelOutput&& d, Choice* c) {
        c->text = std::move(d.content);
        if (p.answer.reports_reasoning()) c->reasoning = std::move(d.reasoning);
        if (!d.tool_calls.empty()) {
          c->tool_calls = tool_call_deltas_json(d.tool_calls, calls_sent);
          calls_sent += d.tool_calls.size();
        }
      };
      int64_t text_offset = static_cast<int64_t>(job.echo.size());
      job.generate.on_text = [&](const TextDelta& delta) {
        if (first_token) ctx->metrics.observe_first_token(p.endpoint, seconds_since(p.start));
        first_token = false;
        Choice c;
        c.index = job.index;
        if (p.logprobs) c.logprobs = logprobs_json(*ctx, kind, delta.logprobs, &text_offset);
        if (!answer) {
          c.text = std::string(delta.text);
          return sse.send(chunk_json(p.header, c, false));
        }
        tokenizer::ModelOutput d = answer->feed(delta.text);
        if (d.empty() && delta.logprobs.empty()) return true;
        answer_chunk(std::move(d), &c);
        return sse.send(chunk_json(p.header, c, false));
      };
      job.generate.cancelled = gone;
      Result<GenerateResponse> out = ctx->backend.generate(job.generate);
      if (!out.is_ok()) {
        ticket.reset();
        sse.send(api_error_json(api_error_from_status(out.status(), p.prompt_param)));
        sse.done();
        sink.done();
        return true;
      }
      if (out->finish_reason == "cancelled") {
        ticket.reset();
        ctx->metrics.record_cancelled(p.endpoint);
        return false;
      }
      if (answer) {
        tokenizer::ModelOutput d = answer->finish(out->finish_reason == "stop");
        if (!d.empty()) {
          Choice c;
          c.index = job.index;
          answer_chunk(std::move(d), &c);
          sse.send(chunk_json(p.header, c, false));
        }
      }
      Choice end;
      end.index = job.index;
      end.finish_reason =
          calls_sent > 0 && out->finish_reason == "stop" ? "tool_calls" : out->finish_reason;
      sse.send(chunk_json(p.header, end, false));
      usage.completion_tokens += static_cast<int64_t>(out->tokens.size());
      if (p.include_stats) stats.push_back(answer_stats_json(*out));
    }
    ticket.reset();  // the next request may start while this one says goodbye
    if (p.include_usage) sse.send(usage_chunk_json(p.header, usage));
    for (const json& s : stats) sse.send(stats_chunk_json(p.header, s));
    if (!sse.done()) {
      ctx->metrics.record_cancelled(p.endpoint);
      return false;
    }
    sink.done();
    finish_metrics(*ctx, p, static_cast<uint64_t>(usage.prompt_tokens),
                   static_cast<uint64_t>(usage.completion_tokens));
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
  std::vector<Choice> choices;
  Usage usage{p.prompt_tokens, 0};
  for (Job& job : p.jobs) {
    job.generate.on_text = [&](const TextDelta&) {
      if (first) ctx.metrics.observe_first_token(p.endpoint, seconds_since(p.start));
      first = false;
      return true;
    };
    job.generate.cancelled = gone;
    Result<GenerateResponse> out = ctx.backend.generate(job.generate);
    if (!out.is_ok()) {
      ticket->reset();
      send_api_error(res, api_error_from_status(out.status(), p.prompt_param));
      return;
    }
    if (out->finish_reason == "cancelled") {
      ticket->reset();
      ctx.metrics.record_cancelled(p.endpoint);
      res.status = 499;
      return;
    }
    Choice c;
    c.index = job.index;
    c.finish_reason = out->finish_reason;
    int64_t text_offset = static_cast<int64_t>(job.echo.size());
    if (p.logprobs) c.logprobs = logprobs_json(ctx, kind, out->logprobs, &text_offset);
    if (kind == OpenAiKind::kChat) {
      ChatAnswer answer(p.answer);
      tokenizer::ModelOutput all = answer.feed(out->text);
      tokenizer::ModelOutput rest = answer.finish(out->finish_reason == "stop");
      c.text = all.content + rest.content;
      if (p.answer.reports_reasoning()) c.reasoning = all.reasoning + rest.reasoning;
      for (tokenizer::ToolCall& call : rest.tool_calls) all.tool_calls.push_back(std::move(call));
      if (!all.tool_calls.empty()) {
        c.tool_calls = tool_calls_json(all.tool_calls);
        if (c.finish_reason == "stop") c.finish_reason = "tool_calls";
      }
      c.null_empty_content = p.tools;
    } else {
      c.text = job.echo + out->text;
    }
    usage.completion_tokens += static_cast<int64_t>(out->tokens.size());
    choices.push_back(std::move(c));
  }
  ticket->reset();
  send_json(res, 200, completion_json(p.header, choices, usage));
  finish_metrics(ctx, p, static_cast<uint64_t>(usage.prompt_tokens),
                 static_cast<uint64_t>(usage.completion_tokens));
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
