// A deterministic stand-in for libFuzzer's driver, so that every fuzz target
// also runs in CI with gcc: it feeds each file of the seed corpus, then
// `--iterations` random mutations of them (bit flips, byte sets, truncation,
// duplication of a span, splicing two inputs), with a fixed seed.
//
// usage: <target> [--iterations N] [--seed S] CORPUS_DIR...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes mutate(const std::vector<Bytes>& corpus, std::mt19937_64& rng) {
  Bytes input = corpus[rng() % corpus.size()];
  const int n_mutations = 1 + static_cast<int>(rng() % 4);
  for (int m = 0; m < n_mutations; ++m) {
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!input.empty()) input[rng() % input.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // set a byte to an interesting value
        if (!input.empty()) {
          static const uint8_t kValues[] = {0, 1, 0x7f, 0x80, 0xff, '"', '{', '}', ':', ','};
          input[rng() % input.size()] = kValues[rng() % sizeof kValues];
        }
        break;
      case 2:  // truncate
        if (!input.empty()) input.resize(rng() % input.size());
        break;
      case 3: {  // duplicate a span
        if (input.empty()) break;
        size_t begin = rng() % input.size();
        size_t len = std::min<size_t>(rng() % 64, input.size() - begin);
        Bytes span(input.begin() + static_cast<long>(begin),
                   input.begin() + static_cast<long>(begin + len));
        input.insert(input.begin() + static_cast<long>(rng() % (input.size() + 1)), span.begin(),
                     span.end());
        break;
      }
      case 4: {  // splice with another input
        const Bytes& other = corpus[rng() % corpus.size()];
        if (other.empty() || input.empty()) break;
        size_t cut = rng() % input.size();
        size_t from = rng() % other.size();
        input.resize(cut);
        input.insert(input.end(), other.begin() + static_cast<long>(from), other.end());
        break;
      }
      default: {  // overwrite 8 bytes with a random little-endian integer
        if (input.size() < 8) break;
        size_t at = rng() % (input.size() - 7);
        uint64_t value = rng() >> (rng() % 64);
        for (int b = 0; b < 8; ++b)
          input[at + static_cast<size_t>(b)] = static_cast<uint8_t>(value >> (8 * b));
        break;
      }
    }
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 10000;
  uint64_t seed = 1;
  std::vector<Bytes> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::strtol(argv[++i], nullptr, 10);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) corpus.push_back(read_file(entry.path()));
      }
    } else {
      std::fprintf(stderr, "usage: %s [--iterations N] [--seed S] CORPUS_DIR...\n", argv[0]);
      return 2;
    }
  }
  if (corpus.empty()) corpus.push_back(Bytes{});
  for (const Bytes& input : corpus) LLVMFuzzerTestOneInput(input.data(), input.size());
  std::mt19937_64 rng(seed);
  for (long i = 0; i < iterations; ++i) {
    Bytes input = mutate(corpus, rng);
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::printf("fuzz driver: %zu seed inputs, %ld mutations, no crash\n", corpus.size(), iterations);
  return 0;
}
