#include "common/backend/cuda/cuda_expert_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <shared_mutex>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/expert_ffn.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/moe_combine.cuh"
#include "kernels/cuda/moe_group.cuh"

namespace dancemoe::backend::cuda {

namespace kc = kernels::cuda;

namespace {

// A device fault while serving experts cannot be answered per request: the
// process ends (STYLE.md, Errors) and its supervisor restarts it.
void die_on_error(cudaError_t e, const CudaDevice& device, const char* what) {
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "dancemoe: %s: %s: %s\n", device.label().c_str(), what,
               kc::error_string(e).c_str());
  std::abort();
}

constexpr uint64_t kMetaAlign = 16;

uint64_t align_meta(uint64_t n) { return (n + kMetaAlign - 1) / kMetaAlign * kMetaAlign; }

// Bytes of the job table for g groups (weight and bias pointers), p pairs,
// t tiles and m tokens.
uint64_t meta_bytes(int64_t g, int64_t p, int64_t t, int64_t m) {
  return 2 * align_meta(3 * g * sizeof(void*)) + align_meta((g + 1) * 4) + 2 * align_meta(p * 4) +
         2 * align_meta(t * 4) + align_meta(4) + align_meta((m + 1) * 4) + 2 * align_meta(p * 4);
}

}  // namespace

struct CudaExpertEngine::Lane {
  std::shared_ptr<CudaDevice> device;
  int device_index = 0;
  cudaStream_t stream = nullptr;
  DeviceMemory memory;
  PinnedMemory host;
  float* x = nullptr;         // [max_tokens, hidden]
  uint16_t* x_b = nullptr;    // [max_tokens, hidden]
  uint8_t* meta = nullptr;    // job table (device copy)
  uint16_t* inter = nullptr;  // [max_pairs, inter]
  float* d = nullptr;         // [max_pairs, hidden]
  float* delta = nullptr;     // [max_tokens, hidden]
  float* h_x = nullptr;
  uint8_t* h_meta = nullptr;
  float* h_delta = nullptr;
  bool busy = false;
  int64_t t0 = 0;
  int64_t t1 = 0;
  // Host scratch for building the job table (sized at creation).
  std::vector<int32_t> count;  // [max_tokens + 1]
  std::vector<int32_t> cursor;

  ~Lane() {
    if (stream != nullptr) {
      device->make_current();
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
  }
};

uint64_t CudaExpertEngine::workspace_bytes(const ModelConfig& c, int64_t max_tokens) {
  const int64_t G = std::max<int64_t>(c.n_experts, 1) + 1;
  const int64_t P = max_tokens * std::max<int64_t>(c.n_experts_per_token, 1) * 2;
  const int64_t T = kc::max_expert_tiles(P, G);
  const int64_t H = c.hidden_size;
  const int64_t I = std::max<int64_t>(c.moe_intermediate_size, 1);
  return static_cast<uint64_t>(max_tokens * H * 4 + max_tokens * H * 2 + P * I * 2 + P * H * 4 +
                               max_tokens * H * 4) +
         meta_bytes(G, P, T, max_tokens) + 6 * 256;
}

CudaExpertEngine::CudaExpertEngine(std::shared_ptr<const DeviceWeights> weights, ThreadPool& pool)
    : weights_(std::move(weights)), cpu_(pool, ComputePrecision::kBF16) {}

CudaExpertEngine::~CudaExpertEngine() = default;

Result<std::unique_ptr<CudaExpertEngine>> CudaExpertEngine::create(
    const ModelConfig& c, std::shared_ptr<const DeviceWeights> weights, ThreadPool& pool,
    int64_t max_tokens, int device_index, Budget budget) {
  std::unique_ptr<CudaExpertEngine> e(new CudaExpertEngine(std::move(weights), pool));
  e->max_tokens_ = max_tokens;
  e->only_device_ = device_index;
  e->max_groups_ = std::max<int64_t>(c.n_experts, 1) + 1;
  e->max_pairs_ = max_tokens * std::max<int64_t>(c.n_experts_per_token, 1) * 2;
  e->max_inter_ = std::max<int64_t>(c.moe_intermediate_size, 1);
  const int64_t H = c.hidden_size;
  const int64_t T = kc::max_expert_tiles(e->max_pairs_, e->max_groups_);
  const uint64_t meta = meta_bytes(e->max_groups_, e->max_pairs_, T, max_tokens);
  const auto& devices = e->weights_->devices();
  for (size_t d = 0; d < devices.size(); ++d) {
    auto lane = std::make_unique<Lane>();
    lane->device = devices[d];
    lane->device_index = static_cast<int>(d);
    const bool other_device = device_index >= 0 && static_cast<int>(d) != device_index;
    if (other_device || e->weights_->expert_slots(static_cast<int>(d)) == 0) {
      e->lanes_.push_back(std::move(lane));  // nothing to run there
      continue;
    }
    lane->device->make_current();
    if (cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking) != cudaSuccess) {
      return lane->device->check("creating the expert stream");
    }
    const auto rows = [](int64_t n, int64_t elem) {
      return static_cast<uint64_t>((n * elem + 255) / 256 * 256);
    };
    const uint64_t bytes = rows(max_tokens * H, 4) + rows(max_tokens * H, 2) + rows(meta, 1) +
                           rows(e->max_pairs_ * e->max_inter_, 2) + rows(e->max_pairs_ * H, 4) +
                           rows(max_tokens * H, 4);
    DMOE_ASSIGN_OR_RETURN(lane->memory,
                          lane->device->allocate(bytes, "the expert engine's workspace", budget));
    uint8_t* p = lane->memory.as<uint8_t>();
    lane->x = reinterpret_cast<float*>(p);
    p += rows(max_tokens * H, 4);
    lane->x_b = reinterpret_cast<uint16_t*>(p);
    p += rows(max_tokens * H, 2);
    lane->meta = p;
    p += rows(meta, 1);
    lane->inter = reinterpret_cast<uint16_t*>(p);
    p += rows(e->max_pairs_ * e->max_inter_, 2);
    lane->d = reinterpret_cast<float*>(p);
    p += rows(e->max_pairs_ * H, 4);
    lane->delta = reinterpret_cast<float*>(p);
    const uint64_t host_bytes = rows(max_tokens * H, 4) * 2 + rows(meta, 1);
    DMOE_ASSIGN_OR_RETURN(lane->host,
                          PinnedMemory::allocate(host_bytes, "the expert engine's staging"));
    uint8_t* h = lane->host.as<uint8_t>();
    lane->h_x = reinterpret_cast<float*>(h);
    lane->h_delta = reinterpret_cast<float*>(h + rows(max_tokens * H, 4));
    lane->h_meta = h + 2 * rows(max_tokens * H, 4);
    lane->count.resize(static_cast<size_t>(max_tokens) + 1);
    lane->cursor.resize(static_cast<size_t>(max_tokens));
    e->lanes_.push_back(std::move(lane));
  }
  e->jobs_on_.resize(devices.size());
  return e;
}

std::string CudaExpertEngine::describe() const {
  std::string text;
  for (const auto& lane : lanes_) {
    if (lane->stream == nullptr) continue;
    text += (text.empty() ? "" : ", ") + lane->device->label();
  }
  return text;
}

void CudaExpertEngine::run_lane(Lane& lane, std::span<const ExpertJob> jobs,
                                const std::vector<int32_t>& job_ids, const float* x, int64_t t0,
                                int64_t t1, int64_t hidden) {
  const CudaDevice& dev = *lane.device;
  dev.make_current();
  const int64_t m = t1 - t0;
  const size_t x_bytes = static_cast<size_t>(m * hidden) * sizeof(float);
  std::memcpy(lane.h_x, x + t0 * hidden, x_bytes);
  cudaMemcpyAsync(lane.x, lane.h_x, x_bytes, cudaMemcpyHostToDevice, lane.stream);
  kc::f32_to_bf16(lane.x, m * hidden, lane.x_b, lane.stream);
  cudaMemsetAsync(lane.delta, 0, x_bytes, lane.stream);

  size_t next = 0;
  bool first = true;
  while (next < job_ids.size()) {
    // The staging below is read by the previous set's copy until it is done.
    if (!first) die_on_error(cudaStreamSynchronize(lane.stream), dev, "expert batch");
    first = false;
    // Take jobs while the workspace holds them; count pairs per token.
    std::fill(lane.count.begin(), lane.count.begin() + m + 1, 0);
    size_t end = next;
    int64_t n_pairs = 0;
    while (end < job_ids.size() && static_cast<int64_t>(end - next) < max_groups_) {
      const ExpertJob& job = jobs[static_cast<size_t>(job_ids[end])];
      int64_t in_range = 0;
      for (int32_t t : job.tokens) in_range += (t >= t0 && t < t1) ? 1 : 0;
      if (n_pairs + in_range > max_pairs_ && end > next) break;
      for (int32_t t : job.tokens) {
        if (t >= t0 && t < t1) ++lane.count[static_cast<size_t>(t - t0) + 1];
      }
      n_pairs += in_range;
      ++end;
    }
    const int64_t G = static_cast<int64_t>(end - next);
    int64_t n_tiles = 0;
    for (size_t j = next; j < end; ++j) {
      int64_t in_range = 0;
      for (int32_t t : jobs[static_cast<size_t>(job_ids[j])].tokens)
        in_range += (t >= t0 && t < t1);
      n_tiles += kc::expert_tiles_for(in_range);
    }
    // Pack the table: pointers, offsets, pairs, tiles, the per-token combine lists.
    uint8_t* base = lane.h_meta;
    uint64_t at = 0;
    auto take = [&](uint64_t bytes) {
      uint8_t* p = base + at;
      at += align_meta(bytes);
      return p;
    };
    auto** gate = reinterpret_cast<const uint16_t**>(take(G * sizeof(void*)));
    auto** up = reinterpret_cast<const uint16_t**>(take(G * sizeof(void*)));
    auto** down = reinterpret_cast<const uint16_t**>(take(G * sizeof(void*)));
    // Bias pointers in one piece (gate, up, down: G each; null without biases).
    auto** bias = reinterpret_cast<const float**>(take(3 * G * sizeof(void*)));
    auto* offsets = reinterpret_cast<int32_t*>(take((G + 1) * 4));
    auto* pair_token = reinterpret_cast<int32_t*>(take(n_pairs * 4));
    auto* pair_group = reinterpret_cast<int32_t*>(take(n_pairs * 4));
    auto* tile_group = reinterpret_cast<int32_t*>(take(n_tiles * 4));
    auto* tile_row0 = reinterpret_cast<int32_t*>(take(n_tiles * 4));
    auto* tiles = reinterpret_cast<int32_t*>(take(4));
    auto* token_start = reinterpret_cast<int32_t*>(take((m + 1) * 4));
    auto* entry_pos = reinterpret_cast<int32_t*>(take(n_pairs * 4));
    auto* entry_weight = reinterpret_cast<float*>(take(n_pairs * 4));
    for (int64_t t = 0; t < m; ++t)
      lane.count[static_cast<size_t>(t) + 1] += lane.count[static_cast<size_t>(t)];
    for (int64_t t = 0; t <= m; ++t) token_start[t] = lane.count[static_cast<size_t>(t)];
    std::copy(lane.count.begin(), lane.count.begin() + m, lane.cursor.begin());
    int32_t p = 0;
    for (int64_t g = 0; g < G; ++g) {
      const ExpertJob& job = jobs[static_cast<size_t>(job_ids[next + static_cast<size_t>(g)])];
      const ExpertOnDevice* on = weights_->find_expert(job.gate.data);
      gate[g] = on->gate;
      up[g] = on->up;
      down[g] = on->down;
      bias[g] = on->gate_bias;
      bias[G + g] = on->up_bias;
      bias[2 * G + g] = on->down_bias;
      offsets[g] = p;
      for (size_t i = 0; i < job.tokens.size(); ++i) {
        const int32_t t = job.tokens[i];
        if (t < t0 || t >= t1) continue;
        pair_token[p] = static_cast<int32_t>(t - t0);
        pair_group[p] = static_cast<int32_t>(g);
        // Entries per token in job order: the CPU engine's combine order.
        const int32_t e = lane.cursor[static_cast<size_t>(t - t0)]++;
        entry_pos[e] = p;
        entry_weight[e] = job.weights[i];
        ++p;
      }
    }
    offsets[G] = p;
    *tiles = kc::write_expert_tiles(offsets, G, tile_group, tile_row0);
    cudaMemcpyAsync(lane.meta, lane.h_meta, at, cudaMemcpyHostToDevice, lane.stream);
    auto dev_ptr = [&](const void* host_ptr) {
      return lane.meta + (static_cast<const uint8_t*>(host_ptr) - lane.h_meta);
    };
    kc::ExpertFfnArgs f;
    f.gate = reinterpret_cast<const uint16_t* const*>(dev_ptr(gate));
    f.up = reinterpret_cast<const uint16_t* const*>(dev_ptr(up));
    f.down = reinterpret_cast<const uint16_t* const*>(dev_ptr(down));
    const auto* bias_dev = reinterpret_cast<const float* const*>(dev_ptr(bias));
    f.gate_bias = bias_dev;
    f.up_bias = bias_dev + G;
    f.down_bias = bias_dev + 2 * G;
    // One model: every job has the model's activation.
    const ExpertFfn& ffn = jobs[static_cast<size_t>(job_ids[next])].ffn;
    f.clamped = ffn.clamped;
    f.alpha = ffn.alpha;
    f.limit = ffn.limit;
    f.n_groups = G;
    f.hidden = hidden;
    f.inter = max_inter_;
    f.group_offsets = reinterpret_cast<const int32_t*>(dev_ptr(offsets));
    f.pair_token = reinterpret_cast<const int32_t*>(dev_ptr(pair_token));
    f.pair_group = reinterpret_cast<const int32_t*>(dev_ptr(pair_group));
    f.tile_group = reinterpret_cast<const int32_t*>(dev_ptr(tile_group));
    f.tile_row0 = reinterpret_cast<const int32_t*>(dev_ptr(tile_row0));
    f.n_tiles = reinterpret_cast<const int32_t*>(dev_ptr(tiles));
    f.max_pairs = n_pairs;
    f.x = lane.x_b;
    f.x_stride = hidden;
    f.h = lane.inter;
    f.d = lane.d;
    kc::expert_ffn(f, /*batched=*/m > kc::kGemvMaxTokens, lane.stream);
    kc::CombineArgs c;
    c.d = lane.d;
    c.hidden = hidden;
    c.pos = reinterpret_cast<const int32_t*>(dev_ptr(entry_pos));
    c.weights = reinterpret_cast<const float*>(dev_ptr(entry_weight));
    c.token_start = reinterpret_cast<const int32_t*>(dev_ptr(token_start));
    c.n_tokens = m;
    c.out = lane.delta;
    c.out_stride = hidden;
    kc::moe_combine(c, lane.stream);
    next = end;
  }
  cudaMemcpyAsync(lane.h_delta, lane.delta, x_bytes, cudaMemcpyDeviceToHost, lane.stream);
  die_on_error(cudaGetLastError(), dev, "launching the expert kernels");
  lane.busy = true;
  lane.t0 = t0;
  lane.t1 = t1;
}

void CudaExpertEngine::collect(Lane& lane, float* out) {
  if (!lane.busy) return;
  lane.device->make_current();
  die_on_error(cudaStreamSynchronize(lane.stream), *lane.device, "expert kernels");
  lane.busy = false;
  // out rows [t0, t1) += delta
  const int64_t n = (lane.t1 - lane.t0) * hidden_;
  float* dst = out + lane.t0 * hidden_;
  for (int64_t i = 0; i < n; ++i) dst[i] += lane.h_delta[i];
}

void CudaExpertEngine::begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens,
                             int64_t hidden, float* out) {
  out_ = out;
  n_tokens_ = n_tokens;
  hidden_ = hidden;
  pending_ = true;
  // From the lookups until the kernels are queued: no slot is reused meanwhile.
  const std::shared_lock<std::shared_mutex> slots = weights_->read_lock();
  for (auto& ids : jobs_on_) ids.clear();
  cpu_jobs_.clear();
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ExpertJob& job = jobs[j];
    if (job.tokens.empty()) continue;
    const ExpertOnDevice* on = weights_->find_expert(job.gate.data);
    const bool usable = on != nullptr && on->host_up == job.up.data &&
                        on->host_down == job.down.data && on->inter == max_inter_ &&
                        job.gate.cols == hidden &&
                        // a job's biases need the device copy's
                        (job.ffn.gate_bias == nullptr || on->gate_bias != nullptr) &&
                        (only_device_ < 0 || on->device_index == only_device_);
    if (usable) {
      jobs_on_[static_cast<size_t>(on->device_index)].push_back(static_cast<int32_t>(j));
    } else {
      cpu_jobs_.push_back(job);
    }
  }
  if (n_tokens <= max_tokens_) {
    for (size_t d = 0; d < lanes_.size(); ++d) {
      if (!jobs_on_[d].empty()) run_lane(*lanes_[d], jobs, jobs_on_[d], x, 0, n_tokens, hidden);
    }
  } else {
    for (int64_t t0 = 0; t0 < n_tokens; t0 += max_tokens_) {
      const int64_t t1 = std::min(n_tokens, t0 + max_tokens_);
      for (size_t d = 0; d < lanes_.size(); ++d) {
        if (jobs_on_[d].empty()) continue;
        run_lane(*lanes_[d], jobs, jobs_on_[d], x, t0, t1, hidden);
        collect(*lanes_[d], out);
      }
    }
  }
  // Runs while the GPUs work.
  if (!cpu_jobs_.empty()) cpu_.begin(cpu_jobs_, x, n_tokens, hidden, out);
}

void CudaExpertEngine::finish() {
  if (!pending_) return;
  for (auto& lane : lanes_) collect(*lane, out_);
  pending_ = false;
}

}  // namespace dancemoe::backend::cuda
