// Tokenizer speed: load time of the real tokenizers (Qwen3's 151k vocab,
// the 32k sentencepiece-style "llama2" one), encode throughput on ~10 kB of
// English and on the mixed-script parity corpus, decode and streaming
// decode cost per token. Run in a Release build from the repository root:
//
//   build/release/tests/bench_tokenizer [FIXTURE_ROOT]
//
// FIXTURE_ROOT defaults to tests/fixtures (npm/ from deploy/install-deps.sh,
// tokenizer/corpus.jsonl). Timings are medians of several runs; the machine
// is shared, so compare ratios taken in one run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/tokenizer/incremental_decoder.h"
#include "common/tokenizer/synthetic_tokenizer.h"
#include "common/tokenizer/tokenizer.h"

namespace {

using dancemoe::tokenizer::IncrementalDecoder;
using dancemoe::tokenizer::Tokenizer;
using Clock = std::chrono::steady_clock;

double median_ms(int runs, const std::function<void()>& body) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    body();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::vector<std::string> read_corpus(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return lines;
}

void bench(const char* name, const std::filesystem::path& tokenizer_json,
           const std::vector<std::string>& corpus) {
  std::unique_ptr<Tokenizer> tok;
  const double load_ms = median_ms(3, [&] {
    auto loaded = Tokenizer::load(tokenizer_json);
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().to_string().c_str());
      std::exit(1);
    }
    tok = std::move(loaded).value();
  });
  std::printf("%-10s load %8.1f ms  (vocab %d)\n", name, load_ms, tok->vocab_size());

  std::string english;
  for (size_t i = 0; english.size() < 10000; i = (i + 1) % 30) english += corpus[i] + "\n";
  std::string mixed;
  for (const std::string& line : corpus) mixed += line + "\n";

  for (const auto& [label, text] : {std::pair{"english", &english}, std::pair{"corpus", &mixed}}) {
    std::vector<int32_t> ids;
    const double ms = median_ms(9, [&] { ids = tok->encode(*text, false).value(); });
    std::printf("%-10s encode %-7s %7zu bytes -> %6zu ids %8.2f ms  %7.1f MB/s\n", name, label,
                text->size(), ids.size(), ms, text->size() / ms / 1000.0);
  }
  const std::vector<int32_t> ids = tok->encode(english, false).value();
  std::string decoded;
  const double decode_ms = median_ms(9, [&] { decoded = tok->decode(ids, false); });
  std::string streamed;
  const double stream_ms = median_ms(5, [&] {
    IncrementalDecoder decoder(*tok);
    streamed.clear();
    for (int32_t id : ids) streamed += decoder.push(id);
    streamed += decoder.flush();
  });
  std::printf("%-10s decode  %6zu ids %8.2f ms; streaming %7.2f us/token%s\n", name, ids.size(),
              decode_ms, stream_ms * 1000.0 / ids.size(),
              streamed == decoded ? "" : "  (MISMATCH)");
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = argc > 1 ? argv[1] : "tests/fixtures";
  const std::vector<std::string> corpus = read_corpus(root / "tokenizer" / "corpus.jsonl");
  if (corpus.empty()) {
    std::fprintf(stderr, "no corpus at %s; run from the repository root\n",
                 (root / "tokenizer" / "corpus.jsonl").c_str());
    return 2;
  }
  for (const char* package : {"tokenizer-qwen3", "tokenizer-llama2"}) {
    const std::filesystem::path path = root / "npm" / package / "models" / "tokenizer.json";
    if (!std::filesystem::exists(path)) {
      std::printf("%s: absent (run deploy/install-deps.sh)\n", path.c_str());
      continue;
    }
    bench(package + 10, path, corpus);
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "bench_tokenizer";
  std::filesystem::create_directories(dir);
  const double make_ms = median_ms(3, [&] {
    if (!dancemoe::tokenizer::write_synthetic_tokenizer(dir, 151669).is_ok()) std::exit(1);
  });
  std::printf("synthetic  make_synthetic_tokenizer(151669) + write %8.1f ms\n", make_ms);
  bench("synthetic", dir / "tokenizer.json", corpus);
  std::filesystem::remove_all(dir);
  return 0;
}
