// `dancemoe demo`: the README's main job on the embedded default. Generates
// the small demo model (random weights, synthetic tokenizer) if it is not
// there yet, loads it on this machine and answers three prompts of different
// kinds, streaming the text and the speed of each.
#include <cstdio>
#include <filesystem>

#include "common/generation/generator.h"
#include "common/model/local_model.h"
#include "common/model/synthetic/synthetic_model.h"
#include "common/runtime/progress_bar.h"
#include "common/tokenizer/chat_format.h"
#include "common/tokenizer/tokenizer.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

struct Options {
  std::string model;
  std::string demo_dir = "demo-model";
  int max_tokens = 48;
  int threads = 0;
};

Status ensure_demo_model(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "config.json")) return Status::ok();
  SyntheticModelSpec spec;
  spec.arch = "qwen3_moe";
  spec.preset = "small";
  spec.seed = 2026;
  ProgressBar bar("generating the demo model in " + dir.string());
  Status status =
      write_synthetic_model(spec, dir, [&](uint64_t d, uint64_t t) { bar.update(d, t); });
  bar.finish();
  return status;
}

int run(const Options& o) {
  const bool own_model = o.model.empty();
  const std::filesystem::path dir = own_model ? o.demo_dir : o.model;
  if (own_model) {
    std::printf(
        "DanceMoE demo: the model in %s has RANDOM weights (generated here; no weights can be "
        "downloaded), so its text is not meaningful. Pass --model DIR for a real checkpoint.\n\n",
        dir.c_str());
    if (Status s = ensure_demo_model(dir); !s.is_ok()) return report_failure("demo", s);
  }
  LocalModelOptions options;
  options.n_threads = o.threads;
  ProgressBar bar("loading " + dir.string());
  options.progress = [&](uint64_t d, uint64_t t) { bar.update(d, t); };
  Result<std::unique_ptr<LocalModel>> model = LocalModel::open(dir, options);
  bar.finish();
  if (!model.is_ok()) return report_failure("demo", model.status());
  const Checkpoint& ckpt = (*model)->checkpoint();
  if (!ckpt.tokenizer_path())
    return report_failure("demo", not_found(dir.string() + ": no tokenizer.json"));
  Result<std::unique_ptr<tokenizer::Tokenizer>> tok =
      tokenizer::Tokenizer::load(*ckpt.tokenizer_path());
  if (!tok.is_ok()) return report_failure("demo", tok.status());
  const ModelConfig& config = (*model)->config();
  std::printf("model %s (%s): %lld layers, %lld experts per MoE layer, top-%lld; id %s\n",
              dir.c_str(), config.hf_architecture.c_str(), static_cast<long long>(config.n_layers),
              static_cast<long long>(config.n_experts),
              static_cast<long long>(config.n_experts_per_token), ckpt.model_id().c_str());
  std::printf("weights in memory: %.1f MB dense + %.1f MB experts (%lld experts resident)\n\n",
              static_cast<double>((*model)->dense().n_bytes()) / 1e6,
              static_cast<double>((*model)->experts().resident_bytes()) / 1e6,
              static_cast<long long>((*model)->experts().n_resident()));

  const char* prompts[] = {
      "Write a Python function that reverses a linked list.",
      "What is 17 times 23? Explain step by step.",
      "Summarise the causes of the French Revolution in two sentences.",
  };
  Transformer& tf = (*model)->transformer();
  Generator generator(tf, **tok, collect_eos_ids(config, **tok));
  for (const char* prompt : prompts) {
    std::string text = prompt;
    if (auto format = (*tok)->chat_format()) {
      std::vector<tokenizer::ChatMessage> messages = {{"user", prompt}};
      Result<std::string> chat = tokenizer::format_chat(*format, messages, true);
      if (chat.is_ok()) text = *chat;
    }
    Result<std::vector<int32_t>> ids = (*tok)->encode(text, false);
    if (!ids.is_ok()) return report_failure("demo", ids.status());
    Result<KvCache> cache = tf.new_cache(static_cast<int64_t>(ids->size()) + o.max_tokens);
    if (!cache.is_ok()) return report_failure("demo", cache.status());
    GenerationParams params;
    params.max_tokens = o.max_tokens;
    params.sampling.temperature = 0.8f;
    params.sampling.top_k = 40;
    params.sampling.seed = 7;
    std::printf("> %s\n", prompt);
    Result<GenerationResult> r =
        generator.generate(*ids, *cache, params, [](std::string_view piece) {
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
          return true;
        });
    if (!r.is_ok()) return report_failure("demo", r.status());
    std::printf(
        "\n[%lld prompt tokens at %.0f tok/s, %zu generated at %.1f tok/s, finish: %s]\n\n",
        static_cast<long long>(r->prompt_tokens),
        static_cast<double>(r->prompt_tokens) / r->prefill_seconds, r->tokens.size(),
        r->decode_seconds > 0 ? static_cast<double>(r->tokens.size()) / r->decode_seconds : 0.0,
        std::string(finish_reason_name(r->finish)).c_str());
  }
  std::printf("demo finished: 3 prompts answered on one node.\n");
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = root.add_subcommand(
      "demo", "Generate the demo model if needed and answer three prompts with it");
  cmd->add_option("--model", o->model, "use this model directory instead of the demo model");
  cmd->add_option("--demo-dir", o->demo_dir, "where the demo model is kept")->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "tokens per answer")->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads (0: all cores)")->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = run(*o); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
