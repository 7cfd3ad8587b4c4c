#include "edge_node/agent/batch_scheduler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::node {
namespace {

struct BatchFixture {
  testing::TempDir dir{"batch"};
  std::unique_ptr<ModelRuntime> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<int32_t> eos;

  explicit BatchFixture(ComputePrecision precision = ComputePrecision::kF32) {
    SyntheticModelSpec spec;
    spec.preset = "tiny";
    spec.seed = 21;
    testing::write_model(spec, dir.path());
    model = testing::open_model(dir.path(), precision);
    auto loaded = tokenizer::Tokenizer::load(dir.path() / "tokenizer.json");
    REQUIRE(loaded.is_ok());
    tok = std::move(loaded).value();
    eos = collect_eos_ids(model->config(), *tok);
  }

  std::unique_ptr<BatchScheduler> scheduler(BatchOptions options,
                                            std::function<void(const StepInfo&)> on_step = {}) {
    BatchScheduler::Parts parts;
    parts.transformer = &model->transformer();
    parts.tokenizer = tok.get();
    parts.eos_ids = eos;
    parts.on_step = std::move(on_step);
    auto made = BatchScheduler::create(std::move(parts), options);
    REQUIRE(made.is_ok());
    return std::move(*made);
  }

  std::vector<int32_t> encode(const std::string& text) {
    auto ids = tok->encode(text, true);
    REQUIRE(ids.is_ok());
    return *ids;
  }

  GenerationResult alone(const std::vector<int32_t>& prompt, const GenerationParams& params) {
    auto cache = model->transformer().new_cache(256);
    REQUIRE(cache.is_ok());
    Generator generator(model->transformer(), *tok, eos);
    auto result = generator.generate(prompt, *cache, params, {});
    REQUIRE(result.is_ok());
    return std::move(*result);
  }
};

GenerationParams greedy(int32_t max_tokens) {
  GenerationParams params;
  params.max_tokens = max_tokens;
  params.sampling.temperature = 0.0f;
  params.ignore_eos = true;
  return params;
}

const char* const kPrompts[] = {
    "The quick brown fox",
    "Once upon a time, in a land far away, there lived",
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
    "hello",
    "A much longer prompt that takes several prefill chunks to get through, because the "
    "scheduler only prefills a few tokens per step while the others decode",
    "Zebra"};

}  // namespace

TEST_CASE("batch scheduler: greedy sequences generated together equal each generated alone (f32)") {
  BatchFixture f;
  BatchOptions options;
  options.max_sequences = 8;
  options.prefill_chunk_tokens = 8;  // several chunks per prompt, interleaved with decoding
  options.context_tokens = 256;
  std::atomic<int64_t> widest{0};
  auto scheduler = f.scheduler(options, [&](const StepInfo& step) {
    if (step.n_sequences > widest.load()) widest = step.n_sequences;
    // A step of the tiny model is far shorter than a thread start on a loaded
    // machine: pace it so that the clients overlap.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  const size_t n = std::size(kPrompts);
  std::vector<GenerationResult> expected;
  for (size_t i = 0; i < n; ++i) expected.push_back(f.alone(f.encode(kPrompts[i]), greedy(24)));

  std::vector<Result<SequenceOutcome>> got(n, internal_error("not run"));
  std::vector<std::string> streamed(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      SequenceJob job;
      job.prompt = f.encode(kPrompts[i]);
      job.params = greedy(24);
      job.on_text = [&, i](const TextDelta& d) {
        streamed[i] += d.text;
        return true;
      };
      got[i] = scheduler->run(std::move(job));
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    REQUIRE(got[i].is_ok());
    CHECK(got[i]->result.tokens == expected[i].tokens);
    CHECK(got[i]->result.text == expected[i].text);
    CHECK(streamed[i] == expected[i].text);
    CHECK(got[i]->result.finish == FinishReason::kLength);
    CHECK(got[i]->step_ms.size() == 23);
  }
  MESSAGE("widest step: ", widest.load(), " sequences");
  CHECK(widest.load() > 1);
  const BatchScheduler::Stats s = scheduler->stats();
  CHECK(s.blocks_used == 0);
  CHECK(s.active == 0);
}

TEST_CASE("batch scheduler: a short prompt runs in a step of its own, then joins the decoders") {
  BatchFixture f;
  BatchOptions options;
  options.context_tokens = 512;
  std::mutex mutex;
  std::vector<StepInfo> steps;
  auto scheduler = f.scheduler(options, [&](const StepInfo& step) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      steps.push_back(step);
    }
    // Paced, so that the neighbour is still decoding when the prompt arrives.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::atomic<int> neighbour_tokens{0};
  std::thread neighbour([&] {
    SequenceJob job;
    job.prompt = f.encode("a neighbour that keeps going");
    job.params = greedy(400);
    job.on_text = [&](const TextDelta&) {
      ++neighbour_tokens;
      return true;
    };
    CHECK(scheduler->run(std::move(job)).is_ok());
  });
  while (neighbour_tokens < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  size_t before = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    before = steps.size();
  }
  SequenceJob job;
  job.prompt = f.encode("hello there");
  job.params = greedy(4);
  REQUIRE(scheduler->run(std::move(job)).is_ok());
  const int neighbour_at_end = neighbour_tokens.load();
  neighbour.join();
  REQUIRE(neighbour_at_end < 400);  // the neighbour was decoding throughout
  std::lock_guard<std::mutex> lock(mutex);
  // The first step with prompt tokens after the neighbour started decoding
  // holds the new prompt alone; the next one runs both sequences.
  size_t i = before;
  while (i < steps.size() && steps[i].decode_only) ++i;
  REQUIRE(i + 1 < steps.size());
  CHECK(steps[i].n_sequences == 1);
  CHECK(steps[i].n_tokens == static_cast<int64_t>(f.encode("hello there").size()));
  CHECK(steps[i + 1].n_sequences == 2);
  CHECK(steps[i + 1].decode_only);
}

TEST_CASE(
    "batch scheduler: a prompt arriving during a step runs between its layers, outputs unchanged") {
  BatchFixture f;
  const char* const neighbours[2] = {"a neighbour that keeps going", "and another one"};
  const std::vector<int32_t> prompt = f.encode("hello there");
  const std::vector<int32_t> expected = f.alone(prompt, greedy(6)).tokens;
  // One stream decoding alone, and two together: either step pauses for it.
  for (int n : {1, 2}) {
    CAPTURE(n);
    BatchOptions options;
    options.context_tokens = 512;
    std::mutex mutex;
    std::vector<StepInfo> steps;
    std::atomic<bool> hold{false};     // the next step of the decoders waits for the prompt
    std::atomic<bool> holding{false};  // ... and is waiting now
    BatchScheduler* raw = nullptr;
    auto scheduler = f.scheduler(options, [&](const StepInfo& step) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        steps.push_back(step);
      }
      if (hold && step.n_sequences == n && step.decode_only) {
        hold = false;
        holding = true;
        // Until the new prompt is queued: it then arrives during this step.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (raw->stats().waiting == 0 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // paced: the decoders go on
    });
    raw = scheduler.get();
    std::vector<Result<SequenceOutcome>> got(static_cast<size_t>(n), internal_error("not run"));
    std::atomic<int> decoded[2] = {0, 0};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        SequenceJob job;
        job.prompt = f.encode(neighbours[i]);
        job.params = greedy(48);
        job.on_text = [&, i](const TextDelta&) {
          ++decoded[i];
          return true;
        };
        got[static_cast<size_t>(i)] = scheduler->run(std::move(job));
      });
    }
    while (decoded[0] < 3 || (n == 2 && decoded[1] < 3)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    hold = true;
    while (!holding) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    size_t held_at = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      held_at = steps.size() - 1;
    }
    // A neighbour's own prompt may have arrived during the other's step
    // (threads start late under load): count only the newcomer's.
    const uint64_t interjections_before = scheduler->stats().interjections;
    SequenceJob job;
    job.prompt = prompt;
    job.params = greedy(6);
    Result<SequenceOutcome> newcomer = scheduler->run(std::move(job));
    for (auto& t : threads) t.join();

    REQUIRE(newcomer.is_ok());
    CHECK(newcomer->result.tokens == expected);
    for (int i = 0; i < n; ++i) {
      CAPTURE(i);
      REQUIRE(got[static_cast<size_t>(i)].is_ok());
      CHECK(got[static_cast<size_t>(i)]->result.tokens ==
            f.alone(f.encode(neighbours[i]), greedy(48)).tokens);
    }
    CHECK(scheduler->stats().interjections - interjections_before == 1);
    std::lock_guard<std::mutex> lock(mutex);
    // The held step of the decoders, then -- inside it -- the prompt's own
    // step, then all of them decoding together.
    REQUIRE(held_at + 2 < steps.size());
    CHECK(steps[held_at].n_sequences == n);
    CHECK(!steps[held_at].between_layers);
    CHECK(steps[held_at + 1].between_layers);
    CHECK(steps[held_at + 1].n_sequences == 1);
    CHECK(steps[held_at + 1].n_tokens == static_cast<int64_t>(prompt.size()));
    CHECK(steps[held_at + 2].n_sequences == n + 1);
    CHECK(steps[held_at + 2].decode_only);
  }
}

TEST_CASE("batch scheduler: --stream-interval hands text over in chunks, the first text at once") {
  BatchFixture f;
  const std::vector<int32_t> prompt = f.encode("The quick brown fox");
  const GenerationResult expected = f.alone(prompt, greedy(24));
  // Steps paced far apart, so that the caller's thread keeps up: the chunks
  // it sees are the scheduler's handovers, not its own lag. Each text delta
  // is tagged with the step under way when it arrived; one handover's
  // deltas arrive together, under one step.
  std::atomic<int64_t> steps{0};
  const auto on_step = [&](const StepInfo&) {
    ++steps;
    std::this_thread::sleep_for(std::chrono::milliseconds(8));
  };
  for (const int32_t interval : {1, 4}) {
    CAPTURE(interval);
    BatchOptions options;
    options.context_tokens = 256;
    options.stream_interval = interval;
    auto scheduler = f.scheduler(options, on_step);
    std::vector<int64_t> arrived;  // per text delta
    std::string streamed;
    SequenceJob job;
    job.prompt = prompt;
    job.params = greedy(24);
    job.on_text = [&](const TextDelta& d) {
      arrived.push_back(steps.load());
      streamed += d.text;
      return true;
    };
    const Result<SequenceOutcome> got = scheduler->run(std::move(job));
    REQUIRE(got.is_ok());
    CHECK(got->result.tokens == expected.tokens);
    CHECK(streamed == expected.text);
    const auto deltas = static_cast<int64_t>(arrived.size());
    REQUIRE(deltas >= 6);  // a few tokens make no text of their own (partial characters)
    if (interval == 1) {
      CHECK(got->deliveries >= deltas - 2);  // each delta on its own
    } else {
      // The first delta alone, then fours, the rest at the end.
      CHECK(std::count(arrived.begin(), arrived.end(), arrived.front()) == 1);
      CHECK(got->deliveries >= 2);
      CHECK(got->deliveries <= 2 + (deltas - 1) / 4);
    }
  }
}

TEST_CASE("batch scheduler: a cancelled sequence frees its KV blocks before run() returns") {
  BatchFixture f;
  BatchOptions options;
  options.context_tokens = 256;
  // The tiny model generates a token in well under a millisecond: on a loaded
  // machine a sequence could end before a client thread is scheduled to look
  // (CI saw the neighbour's blocks already back, and a client that meant to
  // cancel after 3 deltas get all 100 tokens). So the first step waits until
  // the neighbour's blocks are read, and every step takes at least 2 ms.
  std::atomic<bool> hold{true};
  auto scheduler = f.scheduler(options, [&](const StepInfo&) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (hold && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  // A long neighbour keeps running meanwhile.
  std::thread neighbour([&] {
    SequenceJob job;
    job.prompt = f.encode("a neighbour that keeps going");
    job.params = greedy(120);
    CHECK(scheduler->run(std::move(job)).is_ok());
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (scheduler->stats().blocks_used == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int64_t neighbour_blocks = scheduler->stats().blocks_used;
  hold = false;
  CHECK(neighbour_blocks > 0);

  SequenceJob job;
  job.prompt = f.encode("this client goes away");
  job.params = greedy(100);
  int deltas = 0;
  job.on_text = [&](const TextDelta&) { return ++deltas < 3; };  // the connection broke
  auto out = scheduler->run(std::move(job));
  REQUIRE(out.is_ok());
  CHECK(out->result.finish == FinishReason::kCancelled);
  CHECK(out->result.tokens.size() < 100);
  // Its blocks are back at once: only the neighbour's remain (or none, if it
  // ended meanwhile).
  CHECK(scheduler->stats().blocks_used <= neighbour_blocks);
  neighbour.join();
  CHECK(scheduler->stats().blocks_used == 0);

  // cancelled() polled while it runs does the same.
  SequenceJob polled;
  polled.prompt = f.encode("another one");
  polled.params = greedy(200);
  std::atomic<int> seen{0};
  polled.on_text = [&](const TextDelta&) {
    ++seen;
    return true;
  };
  polled.cancelled = [&] { return seen.load() >= 2; };
  auto out2 = scheduler->run(std::move(polled));
  REQUIRE(out2.is_ok());
  CHECK(out2->result.finish == FinishReason::kCancelled);
  CHECK(scheduler->stats().blocks_used == 0);
}

TEST_CASE("batch scheduler: admission waits for KV blocks and refuses what can never fit") {
  BatchFixture f;
  BatchOptions options;
  options.context_tokens = 256;
  options.block_tokens = 16;
  options.kv_budget_blocks = 5;  // one 48-token sequence at a time
  std::atomic<int64_t> widest{0};
  auto scheduler = f.scheduler(options, [&](const StepInfo& step) {
    if (step.n_sequences > widest.load()) widest = step.n_sequences;
  });
  SequenceJob huge;
  huge.prompt = f.encode("too long for the budget");
  huge.params = greedy(100);
  auto refused = scheduler->run(std::move(huge));
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message().find("KV budget of 5") != std::string::npos);

  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      SequenceJob job;
      job.prompt = f.encode(kPrompts[i % 2 == 0 ? 0 : 5]);
      job.params = greedy(40);  // 3 blocks: two never fit together
      if (scheduler->run(std::move(job)).is_ok()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok.load() == 3);
  CHECK(widest.load() == 1);
  CHECK(scheduler->stats().blocks_used == 0);
}

TEST_CASE("batch scheduler: a second chat turn reuses the first's KV and generates the same") {
  BatchFixture f;
  BatchOptions options;
  options.context_tokens = 256;
  options.prefix_cache_bytes = 32 << 20;
  auto scheduler = f.scheduler(options);
  const std::string history =
      "System: you are a helpful assistant who answers briefly and politely. User: tell me "
      "about foxes and dogs and the way they jump over each other";
  SequenceJob first;
  first.prompt = f.encode(history);
  first.params = greedy(16);
  auto one = scheduler->run(std::move(first));
  REQUIRE(one.is_ok());
  CHECK(one->cached_tokens == 0);

  std::vector<int32_t> second_prompt = f.encode(history);
  second_prompt.insert(second_prompt.end(), one->result.tokens.begin(), one->result.tokens.end());
  const std::vector<int32_t> more = f.encode(" User: and cats?");
  second_prompt.insert(second_prompt.end(), more.begin() + 1, more.end());
  SequenceJob second;
  second.prompt = second_prompt;
  second.params = greedy(16);
  auto two = scheduler->run(std::move(second));
  REQUIRE(two.is_ok());
  CHECK(two->cached_tokens >= static_cast<int64_t>(f.encode(history).size()));
  CHECK(two->result.tokens == f.alone(second_prompt, greedy(16)).tokens);
  const BatchScheduler::Stats s = scheduler->stats();
  CHECK(s.prefix.hits == 1);
  CHECK(s.prefix.saved_tokens == static_cast<uint64_t>(two->cached_tokens));
}

}  // namespace dancemoe::node
