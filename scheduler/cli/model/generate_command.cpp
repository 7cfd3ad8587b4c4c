// `dancemoe generate --model DIR --prompt "..."`: loads the whole model in
// this process (single node) and streams generated text to stdout; timings
// go to stderr.
#include <cstdio>
#include <random>

#include "common/assembly/model_runtime.h"
#include "common/generation/generator.h"
#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/model/device_flags.h"
#include "scheduler/cli/progress_bar.h"

namespace dancemoe::cli {
namespace {

struct Options {
  std::string model;
  std::string prompt;
  std::string system;
  bool chat = false;
  std::string chat_kwargs;  // JSON object of extra chat template variables
  GenerationParams generation;
  int64_t seed = -1;
  std::string precision = "bf16";
  bool quiet = false;
  DeviceFlags device;
};

Result<std::string> prompt_text(const Options& o, const tokenizer::Tokenizer& tok) {
  if (!o.chat) return o.prompt;
  std::string warning;
  std::unique_ptr<tokenizer::ChatTemplate> chat =
      tokenizer::ChatTemplate::for_tokenizer_or_builtin(tok, &warning);
  if (!warning.empty()) std::fprintf(stderr, "warning: %s\n", warning.c_str());
  if (!chat) {
    return invalid_argument(
        "--chat: the model has no chat template and its tokenizer names no built-in chat format "
        "(ChatML or [INST]); use a plain --prompt");
  }
  tokenizer::ChatRequest request;
  if (!o.system.empty()) request.messages.push_back({{"role", "system"}, {"content", o.system}});
  request.messages.push_back({{"role", "user"}, {"content", o.prompt}});
  if (!o.chat_kwargs.empty()) {
    request.kwargs =
        nlohmann::ordered_json::parse(o.chat_kwargs, nullptr, /*allow_exceptions=*/false);
    if (!request.kwargs.is_object()) {
      return invalid_argument(
          "--chat-kwargs: expected a JSON object, e.g. '{\"enable_thinking\": false}'");
    }
  }
  return chat->render(request);
}

int run(Options o) {
  std::optional<ComputePrecision> precision = parse_precision(o.precision);
  if (!precision)
    return report_failure("generate", invalid_argument("--precision must be f32 or bf16"));
  o.generation.sampling.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();
  if (Status s = o.generation.sampling.validate(); !s.is_ok()) return report_failure("generate", s);

  Result<std::unique_ptr<Checkpoint>> probe = Checkpoint::open(o.model);
  if (!probe.is_ok()) return report_failure("generate", probe.status());
  Result<std::unique_ptr<tokenizer::Tokenizer>> tok = (*probe)->load_tokenizer();
  if (!tok.is_ok()) {
    const Status s = tok.status().code() == StatusCode::kNotFound
                         ? not_found(tok.status().message() +
                                     "; `dancemoe logits` works on token ids without one")
                         : tok.status();
    return report_failure("generate", s);
  }
  Result<std::string> text = prompt_text(o, **tok);
  if (!text.is_ok()) return report_failure("generate", text.status());
  Result<std::vector<int32_t>> ids = (*tok)->encode(*text, /*add_special_tokens=*/!o.chat);
  if (!ids.is_ok()) return report_failure("generate", ids.status());

  RuntimeOptions model_options;
  model_options.precision = *precision;
  if (Status s = apply_device_flags(o.device, &model_options); !s.is_ok()) {
    return report_failure("generate", s);
  }
  ProgressBar bar("loading " + o.model);
  model_options.progress = [&](uint64_t done, uint64_t total) { bar.update(done, total); };
  Result<std::unique_ptr<ModelRuntime>> model =
      ModelRuntime::open(std::move(probe).value(), model_options);
  bar.finish();
  if (!model.is_ok()) return report_failure("generate", model.status());
  Transformer& tf = (*model)->transformer();
  Result<KvCache> cache = tf.new_cache(static_cast<int64_t>(ids->size()) + o.generation.max_tokens);
  if (!cache.is_ok()) return report_failure("generate", cache.status());

  Generator generator(tf, **tok, collect_eos_ids(tf.config(), **tok));
  Result<GenerationResult> result =
      generator.generate(*ids, *cache, o.generation, [](const TextDelta& delta) {
        std::fwrite(delta.text.data(), 1, delta.text.size(), stdout);
        std::fflush(stdout);
        return true;
      });
  std::printf("\n");
  if (!result.is_ok()) return report_failure("generate", result.status());
  if (!o.quiet) {
    const double decode_rate =
        result->decode_seconds > 0
            ? static_cast<double>(result->tokens.size()) / result->decode_seconds
            : 0.0;
    std::fprintf(stderr,
                 "[prompt %lld tokens, prefill %.1f tok/s | generated %zu tokens, %.1f tok/s | "
                 "finish: %s | %d threads, %s | %s]\n",
                 static_cast<long long>(result->prompt_tokens),
                 static_cast<double>(result->prompt_tokens) / result->prefill_seconds,
                 result->tokens.size(), decode_rate,
                 std::string(finish_reason_name(result->finish)).c_str(),
                 (*model)->forward_pool().size(), std::string(precision_name(*precision)).c_str(),
                 (*model)->description().c_str());
  }
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<Options>();
  o->generation.sampling.temperature = 0.8f;
  o->generation.sampling.top_k = 40;
  o->generation.sampling.top_p = 0.95f;
  CLI::App* cmd = root.add_subcommand("generate", "Generate text in this process (single node)");
  cmd->add_option("--model", o->model,
                  "model: a HuggingFace directory, or a .gguf file (or a directory holding one)")
      ->required();
  cmd->add_option("--prompt", o->prompt, "prompt text")->required();
  cmd->add_flag("--chat", o->chat, "wrap the prompt as a user turn in the model's chat format");
  cmd->add_option("--system", o->system, "system message (with --chat)");
  cmd->add_option("--chat-kwargs", o->chat_kwargs,
                  "extra chat template variables as a JSON object (with --chat), e.g. "
                  "'{\"enable_thinking\": false}' (Qwen3) or '{\"reasoning_effort\": \"high\"}' "
                  "(gpt-oss)");
  cmd->add_option("--max-tokens", o->generation.max_tokens, "tokens to generate at most")
      ->capture_default_str();
  cmd->add_option("--temperature", o->generation.sampling.temperature, "0 = greedy")
      ->capture_default_str();
  cmd->add_option("--top-k", o->generation.sampling.top_k, "0 = no limit")->capture_default_str();
  cmd->add_option("--top-p", o->generation.sampling.top_p, "nucleus sampling mass")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "sampling seed (default: random)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--stop", o->generation.stop, "stop string (repeatable)");
  cmd->add_option("--precision", o->precision, "bf16 (fast) or f32 (reference) activations")
      ->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "no timing line on stderr");
  add_device_flags(cmd, &o->device);
  cmd->callback([o, exit_code] { *exit_code = run(*o); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
