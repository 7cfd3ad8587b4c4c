// The CUDA backend's forward pass against the CPU forward in bf16 compute
// mode (the CUDA backend's only mode): the tiny presets (Qwen3-MoE with a
// dense layer, Mixtral, tied f32 weights, OLMoE, Qwen2-MoE, GLM-4.5, gpt-oss,
// DeepSeek-V2 and V3 with latent attention, q_lora_rank null and set) and
// the medium preset -- over a prompt and 32 decode steps fed the CPU's
// tokens, logits within bf16's noise (normalised: max |gpu - cpu| / max
// |cpu|) up to the first token a near-tie routes elsewhere (see
// check_against_cpu) -- plus the
// device KV cache (grouped and latent), prompts split into workspace-sized
// batches, and the MoE path through the executor. Skips (with a message)
// without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "common/assembly/model_runtime.h"
#include "kernels/kernels.h"
#include "tests/kernels/cuda/cuda_test_support.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::testing {
namespace {

std::unique_ptr<ModelRuntime> open_on(const std::filesystem::path& dir, const std::string& device,
                                      int64_t max_batch = 512, bool via_executor = false,
                                      bool graphs = true,
                                      ComputePrecision precision = ComputePrecision::kBF16,
                                      std::optional<kernels::WeightType> expert_type = {}) {
  RuntimeOptions options;
  options.devices.n_threads = 0;
  options.precision = precision;
  options.expert_type = expert_type;
  options.devices.devices = *backend::parse_device_list(device);
  options.devices.max_batch_tokens = max_batch;
  options.devices.experts_via_executor = via_executor;
  options.devices.cuda_graphs = graphs;
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(dir, options);
  REQUIRE_MESSAGE(model.is_ok(), model.status().to_string());
  return std::move(*model);
}

std::vector<int32_t> prompt(int n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> ids;
  uint32_t x = seed;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    ids.push_back(static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab)));
  }
  return ids;
}

// Logits of a prompt (every position) and of `steps` decode steps, each
// step feeding `forced[step]` when given (teacher forcing), else the
// model's own greedy choice.
struct Trajectory {
  std::vector<float> prompt;
  std::vector<std::vector<float>> steps;
  std::vector<int32_t> greedy;  // argmax of each step's input logits
  // Per token (prompt, then each step's): its experts in every MoE layer,
  // each layer's sorted, layer after layer.
  std::vector<std::vector<int32_t>> routes;
};

// routes: record Trajectory::routes (replaces the transformer's routing
// observer for the run); false leaves the caller's observer in place.
Trajectory run(ModelRuntime& m, const std::vector<int32_t>& ids, int steps,
               const std::vector<int32_t>* forced, bool routes = true) {
  Trajectory tr;
  Transformer& tf = m.transformer();
  tr.routes.resize(ids.size() + static_cast<size_t>(steps));
  size_t first_token = 0;  // of the forward under way
  if (routes)
    tf.set_routing_observer([&](int64_t, const RoutingDecision& r) {
      for (int64_t t = 0; t < r.n_tokens; ++t) {
        std::vector<int32_t> experts(r.expert_ids.begin() + t * r.top_k,
                                     r.expert_ids.begin() + (t + 1) * r.top_k);
        std::sort(experts.begin(), experts.end());
        std::vector<int32_t>& route = tr.routes[first_token + static_cast<size_t>(t)];
        route.insert(route.end(), experts.begin(), experts.end());
      }
    });
  auto cache = tf.new_cache(static_cast<int64_t>(ids.size()) + steps);
  REQUIRE_MESSAGE(cache.is_ok(), cache.status().to_string());
  Status s = tf.forward(ids, *cache, LogitsMode::kAll, &tr.prompt);
  REQUIRE_MESSAGE(s.is_ok(), s.to_string());
  const size_t vocab = static_cast<size_t>(m.config().vocab_size);
  std::vector<float> last(tr.prompt.end() - static_cast<std::ptrdiff_t>(vocab), tr.prompt.end());
  for (int step = 0; step < steps; ++step) {
    tr.greedy.push_back(
        static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin()));
    const int32_t next = forced ? (*forced)[static_cast<size_t>(step)] : tr.greedy.back();
    first_token = ids.size() + static_cast<size_t>(step);
    s = tf.forward(std::span(&next, 1), *cache, LogitsMode::kLast, &last);
    REQUIRE_MESSAGE(s.is_ok(), s.to_string());
    tr.steps.push_back(last);
  }
  if (routes) tf.set_routing_observer({});
  return tr;
}

struct Diff {
  double abs = 0;
  double normalised = 0;
};

Diff diff(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  Diff d;
  double ref = 1e-6;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    d.abs = std::isnan(e) ? INFINITY : std::fmax(d.abs, e);
    ref = std::fmax(ref, std::fabs(want[i]));
  }
  d.normalised = d.abs / ref;
  return d;
}

struct Comparison {
  Diff prompt, decode;  // decode: teacher-forced with the reference's tokens
  // The first token (prompt, then steps) routed to other experts in some
  // layer, and the largest difference of the rows before it.
  size_t first_route_diff = 0;
  size_t routes_total = 0;
  Diff before_route_diff;
  int greedy_agree = 0;  // leading decode steps where the greedy choices agree
  int greedy_same = 0;   // decode steps where they agree (teacher-forced: each on its own)
  int steps = 0;
  bool equal() const { return greedy_agree == steps; }
};

Comparison compare(const Trajectory& ref, const Trajectory& other) {
  Comparison c;
  c.prompt = diff(other.prompt, ref.prompt);
  c.routes_total = ref.routes.size();
  while (c.first_route_diff < ref.routes.size() &&
         ref.routes[c.first_route_diff] == other.routes[c.first_route_diff]) {
    ++c.first_route_diff;
  }
  const size_t vocab = ref.steps.empty() ? 0 : ref.steps[0].size();
  const size_t n_prompt = ref.routes.size() - ref.steps.size();
  for (size_t row = 0; row < c.first_route_diff && vocab > 0; ++row) {
    Diff d;
    if (row < n_prompt) {
      const auto at = static_cast<std::ptrdiff_t>(row * vocab);
      d = diff(std::vector<float>(other.prompt.begin() + at,
                                  other.prompt.begin() + at + static_cast<std::ptrdiff_t>(vocab)),
               std::vector<float>(ref.prompt.begin() + at,
                                  ref.prompt.begin() + at + static_cast<std::ptrdiff_t>(vocab)));
    } else {
      d = diff(other.steps[row - n_prompt], ref.steps[row - n_prompt]);
    }
    c.before_route_diff.abs = std::fmax(c.before_route_diff.abs, d.abs);
    c.before_route_diff.normalised = std::fmax(c.before_route_diff.normalised, d.normalised);
  }
  c.steps = static_cast<int>(ref.steps.size());
  for (size_t i = 0; i < ref.steps.size(); ++i) {
    const Diff d = diff(other.steps[i], ref.steps[i]);
    c.decode.abs = std::fmax(c.decode.abs, d.abs);
    c.decode.normalised = std::fmax(c.decode.normalised, d.normalised);
  }
  while (c.greedy_agree < c.steps && ref.greedy[static_cast<size_t>(c.greedy_agree)] ==
                                         other.greedy[static_cast<size_t>(c.greedy_agree)]) {
    ++c.greedy_agree;
  }
  for (size_t i = 0; i < ref.greedy.size(); ++i) c.greedy_same += ref.greedy[i] == other.greedy[i];
  return c;
}

std::string describe(const Comparison& c) {
  std::ostringstream o;
  o << "prompt max |diff| " << c.prompt.abs << " (normalised " << c.prompt.normalised
    << "), decode " << c.decode.abs << " (" << c.decode.normalised << "), greedy tokens agree "
    << c.greedy_agree << "/" << c.steps << " leading, " << c.greedy_same << "/" << c.steps
    << " steps; the same experts for " << c.first_route_diff << " of " << c.routes_total
    << " tokens, before that max |diff| " << c.before_route_diff.abs << " (normalised "
    << c.before_route_diff.normalised << ")";
  return o.str();
}

// GPU against the CPU bf16 forward. The GPU rounds activations to bf16
// where the CPU's bf16 mode does and sums in other orders, so it differs
// from the CPU by the noise of bf16 compute; the CPU's own f32 forward
// measures how large that noise is on this model. On random-weight models
// a router's near-tie can flip on it: that token goes to another expert in
// some layer and from there (its keys and values differ too) the two runs
// compute different things. Measured on an H200: qwen3_moe small's
// routing parted from the CPU's at its 8th token, its logits within 4e-3
// before and up to 0.044 after; deepseek_v3 small's at its 5th (1.1e-2
// before, 0.3 after); medium's at its 3rd, as the CPU's own f32 run's did.
// A fixed bound on every row failed these three. So the check is
// routing-aware: the first token routes the same in every layer, and every
// row before the first token routed differently is within max(2e-2, 2 x
// the f32 difference). A wrong kernel or weight moves the first token's
// logits, or its routing, by far more than that.
void check_against_cpu(const std::string& name, ModelRuntime& cpu, ModelRuntime& cpu_f32,
                       ModelRuntime& gpu, int n_prompt, int steps) {
  const std::vector<int32_t> ids = prompt(n_prompt, cpu.config().vocab_size, 7);
  const Trajectory ref = run(cpu, ids, steps, nullptr);
  const Trajectory on_gpu = run(gpu, ids, steps, &ref.greedy);
  const Trajectory in_f32 = run(cpu_f32, ids, steps, &ref.greedy);
  const Comparison c = compare(ref, on_gpu);
  const Comparison floor = compare(ref, in_f32);
  MESSAGE("parity forward " << name << ": GPU vs CPU: " << describe(c));
  MESSAGE("bf16 noise " << name << ": CPU f32 vs CPU bf16: " << describe(floor));
  const double tolerance =
      std::fmax(2e-2, 2 * std::fmax(floor.prompt.normalised, floor.decode.normalised));
  CHECK(c.first_route_diff > 0);
  CHECK(c.before_route_diff.normalised <= tolerance);
}

SyntheticModelSpec spec(const std::string& arch, const std::string& preset) {
  SyntheticModelSpec s;
  s.arch = arch;
  s.preset = preset;
  s.seed = 3;
  s.write_tokenizer = false;
  return s;
}

TEST_CASE("cuda forward: tiny and small presets match the CPU within bf16 noise") {
  DMOE_REQUIRE_CUDA();
  struct Case {
    const char* name;
    SyntheticModelSpec spec;
  };
  std::vector<Case> cases = {{"qwen3_moe tiny (dense layer 1)", spec("qwen3_moe", "tiny")},
                             {"mixtral tiny", spec("mixtral", "tiny")},
                             {"qwen3_moe tiny, tied f32 weights", spec("qwen3_moe", "tiny")},
                             {"qwen3_moe small", spec("qwen3_moe", "small")},
                             // q/k RMSNorm over the whole projection, no renormalisation
                             {"olmoe tiny", spec("olmoe", "tiny")},
                             // q/k/v biases, shared expert with its sigmoid gate
                             {"qwen2_moe tiny", spec("qwen2_moe", "tiny")},
                             // partial rotary, sigmoid routing with the choice bias,
                             // groups, routed scaling, shared expert, leading dense layers
                             {"glm4_moe tiny", spec("glm4_moe", "tiny")},
                             // sinks, alternating sliding windows, o_proj bias, router bias,
                             // clamped SwiGLU experts with biases, YaRN
                             {"gpt_oss tiny", spec("gpt_oss", "tiny")},
                             // latent attention with q_proj (q_lora_rank null), YaRN mscale,
                             // softmax routing, two shared experts, a leading dense layer
                             {"deepseek_v2 tiny", spec("deepseek_v2", "tiny")},
                             // latent attention through q_a / q_a_layernorm / q_b, the
                             // sigmoid noaux_tc router with groups
                             {"deepseek_v3 tiny", spec("deepseek_v3", "tiny")},
                             {"deepseek_v2 tiny, q_lora_rank set", spec("deepseek_v2", "tiny")},
                             {"deepseek_v3 small", spec("deepseek_v3", "small")}};
  // gpt-oss's experts are MXFP4. The GPU dequantizes them to bf16 and
  // multiplies bf16 activations; the CPU's MXFP4 kernels quantize the
  // activations to 8 bits per 32 values (as llama.cpp does) -- another
  // approximation, 0.5 off this model's logits in places. The reference
  // for the GPU holds the experts in bf16 (exactly the MXFP4 values).
  const std::string bf16_experts = "gpt_oss tiny";
  cases[2].spec.tie_word_embeddings = true;
  cases[2].spec.dtype = DType::kF32;
  cases[10].spec.config_overrides = {{"q_lora_rank", "40"}};
  for (const Case& k : cases) {
    CAPTURE(k.name);
    TempDir dir("cuda-fwd");
    write_model(k.spec, dir.path());
    std::optional<kernels::WeightType> held;
    if (k.name == bf16_experts) held = kernels::WeightType::kBF16;
    auto cpu = open_on(dir.path(), "cpu", 512, false, true, ComputePrecision::kBF16, held);
    auto cpu_f32 = open_on(dir.path(), "cpu", 512, false, true, ComputePrecision::kF32, held);
    auto gpu = open_on(dir.path(), "cuda:0");
    check_against_cpu(k.name, *cpu, *cpu_f32, *gpu, 12, 32);
  }
}

TEST_CASE("cuda forward: medium preset matches the CPU within bf16 noise") {
  DMOE_REQUIRE_CUDA();
  std::filesystem::path dir;
  std::unique_ptr<TempDir> temp;
  if (const char* given = std::getenv("DMOE_MEDIUM_MODEL")) {
    dir = given;
  } else {
    temp = std::make_unique<TempDir>("cuda-medium");
    dir = temp->path();
    write_model(spec("qwen3_moe", "medium"), dir);
  }
  auto cpu = open_on(dir, "cpu");
  auto cpu_f32 = open_on(dir, "cpu", 512, false, true, ComputePrecision::kF32);
  auto gpu = open_on(dir, "cuda:0");
  MESSAGE("medium on " << gpu->description());
  check_against_cpu("qwen3_moe medium", *cpu, *cpu_f32, *gpu, 16, 32);
}

void check_kv_cache(const std::string& arch) {
  TempDir dir("cuda-kv");
  write_model(spec(arch, "tiny"), dir.path());
  auto gpu = open_on(dir.path(), "cuda:0");
  auto split = open_on(dir.path(), "cuda:0", /*max_batch=*/5);
  Transformer& tf = gpu->transformer();
  const std::vector<int32_t> ids = prompt(24, gpu->config().vocab_size, 9);
  auto cache = tf.new_cache(64);
  REQUIRE(cache.is_ok());
  std::vector<float> logits, full;
  REQUIRE(tf.forward(std::span(ids).first(8), *cache, LogitsMode::kLast, &logits).is_ok());
  // Decode (GEMV, decode attention) and a re-run of the prefix as one batch
  // (tensor-core GEMM, prefill attention) sum in different orders: bf16
  // rounding of the activations turns that into differences of the size of
  // the bf16 noise floor (see the parity tests' CPU-level comparison).
  Diff worst;
  for (size_t t = 8; t < ids.size(); ++t) {
    REQUIRE(tf.forward(std::span(ids).subspan(t, 1), *cache, LogitsMode::kLast, &logits).is_ok());
    auto fresh = tf.new_cache(64);  // a second live cache: allocated, not the reserved one
    REQUIRE(fresh.is_ok());
    REQUIRE(tf.forward(std::span(ids).first(t + 1), *fresh, LogitsMode::kLast, &full).is_ok());
    const Diff d = diff(logits, full);
    worst.abs = std::fmax(worst.abs, d.abs);
    worst.normalised = std::fmax(worst.normalised, d.normalised);
  }
  MESSAGE("cuda " << arch << ": decode vs full re-run: max |diff| " << worst.abs << " (normalised "
                  << worst.normalised << ")");
  CHECK(worst.normalised <= 2e-2);

  std::vector<float> whole, pieces;
  auto a = tf.new_cache(64);
  auto b = split->transformer().new_cache(64);
  REQUIRE(tf.forward(ids, *a, LogitsMode::kAll, &whole).is_ok());
  REQUIRE(split->transformer().forward(ids, *b, LogitsMode::kAll, &pieces).is_ok());
  const Diff d = diff(pieces, whole);
  MESSAGE("cuda " << arch << ": 5-token batches vs one batch: max |diff| " << d.abs
                  << " (normalised " << d.normalised << ")");
  CHECK(d.normalised <= 2e-2);
}

// Grouped attention (qwen3_moe) and latent attention (deepseek_v2 and v3,
// whose prompt batches after the first attend to positions already cached).
TEST_CASE("cuda forward: device KV cache decode equals a full re-run, split prompts agree") {
  DMOE_REQUIRE_CUDA();
  for (const char* arch : {"qwen3_moe", "deepseek_v2", "deepseek_v3"}) {
    CAPTURE(arch);
    check_kv_cache(arch);
  }
}

void check_graphs(const std::string& arch) {
  TempDir dir("cuda-graph");
  write_model(spec(arch, "tiny"), dir.path());
  auto graphs = open_on(dir.path(), "cuda:0");
  auto direct = open_on(dir.path(), "cuda:0", 512, false, /*graphs=*/false);
  int observed = 0;
  graphs->transformer().set_routing_observer(
      [&](int64_t, const RoutingDecision& r) { observed += static_cast<int>(r.n_tokens); });
  const std::vector<int32_t> ids = prompt(6, graphs->config().vocab_size, 3);
  // Two sequences one after the other: the second cache re-captures.
  for (int sequence = 0; sequence < 2; ++sequence) {
    const Trajectory a = run(*direct, ids, 20, nullptr, /*routes=*/false);
    const Trajectory b = run(*graphs, ids, 20, &a.greedy, /*routes=*/false);
    const Comparison c = compare(a, b);
    CHECK(c.prompt.abs == 0.0);
    CHECK(c.decode.abs == 0.0);
    CHECK(c.equal());
  }
  // Every MoE layer's routing of every token reached the observer.
  CHECK(observed == 2 * (6 + 20) * static_cast<int>(graphs->config().n_moe_layers()));
}

TEST_CASE("cuda forward: decode graphs replay exactly what direct launches compute") {
  DMOE_REQUIRE_CUDA();
  for (const char* arch : {"qwen3_moe", "deepseek_v3"}) {
    CAPTURE(arch);
    check_graphs(arch);
  }
}

TEST_CASE("cuda forward: MoE layers through the executor match the on-device experts") {
  DMOE_REQUIRE_CUDA();
  TempDir dir("cuda-exec");
  write_model(spec("qwen3_moe", "small"), dir.path());
  auto device = open_on(dir.path(), "cuda:0");
  auto via_host = open_on(dir.path(), "cuda:0", 512, /*via_executor=*/true);
  CHECK(device->description() != "");
  int observed = 0;
  via_host->transformer().set_routing_observer(
      [&](int64_t, const RoutingDecision&) { ++observed; });
  int observed_device = 0;
  device->transformer().set_routing_observer(
      [&](int64_t, const RoutingDecision&) { ++observed_device; });
  const std::vector<int32_t> ids = prompt(12, device->config().vocab_size, 5);
  const Trajectory a = run(*device, ids, 8, nullptr, /*routes=*/false);
  const Trajectory b = run(*via_host, ids, 8, &a.greedy, /*routes=*/false);
  const Comparison c = compare(a, b);
  MESSAGE("cuda: executor path vs on-device experts: " << describe(c));
  CHECK(c.prompt.normalised <= 2e-2);
  CHECK(c.decode.normalised <= 2e-2);
  CHECK(observed == observed_device);
  CHECK(observed == 9 * static_cast<int>(device->config().n_moe_layers()));
}

}  // namespace
}  // namespace dancemoe::testing
