#include "common/backend/cuda/cuda_forward.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "common/backend/cuda/cuda_latent_attention.h"
#include "common/inference/rope.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/expert_ffn.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/moe_combine.cuh"
#include "kernels/cuda/moe_group.cuh"
#include "kernels/cuda/qkv_prepare.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/router.cuh"

namespace dancemoe::backend::cuda {

namespace kc = kernels::cuda;

// The KV cache reserved at load, leased to one cache at a time.
struct CudaForward::KvPool {
  std::mutex mutex;
  DeviceMemory reserved;
  int64_t reserved_tokens = 0;
  bool leased = false;
};

namespace {

// A KvCache's device storage, laid out as a host KvCache's:
// [n_layers][keys [capacity, key_dim], values [capacity, value_dim]] f32
// with the config's cache_key_dim / cache_value_dim (grouped attention:
// kv_dim each; latent attention: the compressed row, no values).
class CudaKvStorage final : public KvCache::ExternalStorage {
 public:
  CudaKvStorage(std::shared_ptr<CudaForward::KvPool> pool, DeviceMemory own, float* base)
      : pool_(std::move(pool)), own_(std::move(own)), base_(base) {}
  ~CudaKvStorage() override {
    if (own_.data() == nullptr) {
      std::lock_guard<std::mutex> lock(pool_->mutex);
      pool_->leased = false;
    }
  }
  const CudaForward::KvPool* pool() const { return pool_.get(); }
  float* base() const { return base_; }

 private:
  std::shared_ptr<CudaForward::KvPool> pool_;
  DeviceMemory own_;  // empty when leased from the pool
  float* base_;
};

// Sizes of the workspace pieces for a batch of B tokens.
struct Dims {
  int64_t B, H, Q, KV, AO, half, E, K, P, I, DI, V, T, inter_elems, d_rows;
  int64_t LQ, LKV, LQLAT, LOLAT;  // latent attention (0 otherwise)
  int64_t APART;                  // decode attention's split states (0 for latent attention)
  explicit Dims(const ModelConfig& c, int64_t b) {
    B = b;
    H = c.hidden_size;
    Q = c.q_dim();
    const bool latent = c.attention == AttentionKind::kLatent;
    KV = latent ? 0 : c.kv_dim();  // MLA projects no k / v
    AO = c.attention_out_dim();
    LQ = latent ? c.q_lora_rank : 0;
    LKV = latent ? c.kv_lora_rank + c.rope_dim() : 0;
    LQLAT = latent ? c.n_heads * LKV : 0;
    LOLAT = latent ? c.n_heads * c.kv_lora_rank : 0;
    // kc::attention decodes up to 2 query tokens (more go to the prefill kernel).
    APART = latent ? 0 : kc::decode_partial_floats(std::min<int64_t>(b, 2), c.n_heads, c.head_dim);
    half = c.rope_dim() / 2;
    E = std::max<int64_t>(c.n_experts, 1);
    K = std::max<int64_t>(c.n_experts_per_token, 1);
    P = B * K;
    I = c.moe_intermediate_size;
    DI = c.dense_intermediate_size;
    V = c.vocab_size;
    T = kc::max_expert_tiles(std::max(P, B), E);
    inter_elems = std::max({P * I, B * DI, B * c.shared_intermediate_size});
    d_rows = std::max(P, B);
  }
};

class Carver {
 public:
  explicit Carver(uint8_t* base) : base_(base) {}
  template <class T>
  T* take(int64_t n) {
    T* p = reinterpret_cast<T*>(base_ == nullptr ? nullptr : base_ + at_);
    at_ += (static_cast<uint64_t>(n) * sizeof(T) + 255) / 256 * 256;
    return p;
  }
  uint64_t size() const { return at_; }

 private:
  uint8_t* base_;
  uint64_t at_ = 0;
};

}  // namespace

struct CudaForward::Graph {
  cudaGraphExec_t exec = nullptr;
  float* kv_base = nullptr;
  int64_t kv_capacity = 0;
  ~Graph() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
};

// Device workspace and page-locked host staging of one engine.
struct CudaForward::Buffers {
  DeviceMemory device;
  PinnedMemory host;
  // device
  int32_t* ids;
  int32_t* pos0;
  double* inv_freq;
  float *cos, *sin, *h, *xn, *q, *k, *v, *attn, *attn_partial, *router_logits, *r_weights,
      *pair_weight, *d, *delta, *logits, *shared_weight;
  uint16_t *xn_b, *attn_b, *inter;
  // latent attention (cuda_latent_attention.h's LatentBatch scratch)
  float *q_a, *kv_a, *q_lat, *o_lat;
  uint16_t* q_a_b;
  int32_t *r_ids, *offsets, *pair_token, *pair_group, *pair_pos, *tile_group, *tile_row0, *n_tiles;
  // host (pinned)
  int32_t* h_ids;
  int32_t* h_pos0;
  float* h_logits;
  float* h_xn;
  float* h_delta;
  int32_t* h_route_ids;    // [n_layers, P]
  float* h_route_weights;  // [n_layers, P]

  // Lays the pieces out over `dev` / `pinned` (null: sizing only).
  void carve(const ModelConfig& c, int64_t b, uint8_t* dev, uint8_t* pinned, uint64_t* dev_bytes,
             uint64_t* host_bytes) {
    const Dims d_(c, b);
    Carver g(dev);
    ids = g.take<int32_t>(d_.B);
    pos0 = g.take<int32_t>(1);
    inv_freq = g.take<double>(d_.half);
    cos = g.take<float>(d_.B * d_.half);
    sin = g.take<float>(d_.B * d_.half);
    h = g.take<float>(d_.B * d_.H);
    xn = g.take<float>(d_.B * d_.H);
    xn_b = g.take<uint16_t>(d_.B * d_.H);
    q = g.take<float>(d_.B * d_.Q);
    k = g.take<float>(d_.B * d_.KV);
    v = g.take<float>(d_.B * d_.KV);
    attn = g.take<float>(d_.B * d_.AO);
    attn_b = g.take<uint16_t>(d_.B * d_.AO);
    attn_partial = g.take<float>(d_.APART);
    q_a = g.take<float>(d_.B * d_.LQ);
    q_a_b = g.take<uint16_t>(d_.B * d_.LQ);
    kv_a = g.take<float>(d_.B * d_.LKV);
    q_lat = g.take<float>(d_.B * d_.LQLAT);
    o_lat = g.take<float>(d_.B * d_.LOLAT);
    router_logits = g.take<float>(d_.B * d_.E);
    r_ids = g.take<int32_t>(d_.P);
    r_weights = g.take<float>(d_.P);
    shared_weight = g.take<float>(d_.B);
    offsets = g.take<int32_t>(d_.E + 1);
    pair_token = g.take<int32_t>(d_.d_rows);
    pair_weight = g.take<float>(d_.d_rows);
    pair_group = g.take<int32_t>(d_.d_rows);
    pair_pos = g.take<int32_t>(d_.d_rows);
    tile_group = g.take<int32_t>(d_.T);
    tile_row0 = g.take<int32_t>(d_.T);
    n_tiles = g.take<int32_t>(1);
    inter = g.take<uint16_t>(d_.inter_elems);
    d = g.take<float>(d_.d_rows * d_.H);
    delta = g.take<float>(d_.B * d_.H);
    logits = g.take<float>(d_.B * d_.V);
    *dev_bytes = g.size();
    Carver p(pinned);
    h_ids = p.take<int32_t>(d_.B);
    h_pos0 = p.take<int32_t>(1);
    h_logits = p.take<float>(d_.B * d_.V);
    h_xn = p.take<float>(d_.B * d_.H);
    h_delta = p.take<float>(d_.B * d_.H);
    h_route_ids = p.take<int32_t>(c.n_layers * d_.P);
    h_route_weights = p.take<float>(c.n_layers * d_.P);
    *host_bytes = p.size();
  }
};

uint64_t CudaForward::workspace_bytes(const ModelConfig& config, int64_t max_batch_tokens) {
  Buffers b{};
  uint64_t dev = 0, host = 0;
  b.carve(config, max_batch_tokens, nullptr, nullptr, &dev, &host);
  return dev;
}

uint64_t CudaForward::kv_cache_bytes(const ModelConfig& c, int64_t tokens) {
  return static_cast<uint64_t>(c.n_layers) * static_cast<uint64_t>(tokens) *
         static_cast<uint64_t>(c.cache_key_dim() + c.cache_value_dim()) * sizeof(float);
}

CudaForward::CudaForward(const ModelConfig& config, std::shared_ptr<const DeviceWeights> weights,
                         const CudaForwardOptions& options)
    : config_(config), weights_(std::move(weights)), options_(options) {
  device_index_ = weights_->dense_device();
  device_ = weights_->devices()[static_cast<size_t>(device_index_)];
}

CudaForward::~CudaForward() {
  // Work still queued may read the buffers.
  if (device_) cudaStreamSynchronize(device_->stream());
  graph_.reset();
}

Result<std::unique_ptr<CudaForward>> CudaForward::create(
    const ModelConfig& config, std::shared_ptr<const DeviceWeights> weights,
    const CudaForwardOptions& options) {
  if (options.max_batch_tokens < 1) return invalid_argument("--max-batch-tokens must be >= 1");
  if (config.head_dim > kc::kMaxHeadDim || config.head_dim % 2 != 0) {
    return invalid_argument("the CUDA attention kernels need an even head_dim of at most " +
                            std::to_string(kc::kMaxHeadDim) + ", the model has " +
                            std::to_string(config.head_dim));
  }
  if (config.rope_dim() % 2 != 0 || config.rope_dim() > config.head_dim) {
    return invalid_argument(
        "the CUDA rotary kernels need an even rotary dimension of at most "
        "head_dim, the model has " +
        std::to_string(config.rope_dim()));
  }
  if (const std::string why = latent_attention_unsupported(config); !why.empty()) {
    return invalid_argument("the CUDA kernels do not run " + why);
  }
  std::unique_ptr<CudaForward> f(new CudaForward(config, std::move(weights), options));
  if (options.experts_on_device && !f->weights_->holds_all_experts(f->device_index_)) {
    return failed_precondition(f->device_->label() + " does not hold every expert");
  }
  DMOE_RETURN_IF_ERROR(f->allocate());
  return f;
}

Status CudaForward::allocate() {
  buf_ = std::make_unique<Buffers>();
  uint64_t dev_bytes = 0, host_bytes = 0;
  buf_->carve(config_, options_.max_batch_tokens, nullptr, nullptr, &dev_bytes, &host_bytes);
  DMOE_ASSIGN_OR_RETURN(buf_->device, device_->allocate(dev_bytes, "the forward workspace"));
  DMOE_ASSIGN_OR_RETURN(buf_->host, PinnedMemory::allocate(host_bytes, "the forward staging"));
  DeviceMemory keep_device = std::move(buf_->device);
  PinnedMemory keep_host = std::move(buf_->host);
  buf_->carve(config_, options_.max_batch_tokens, keep_device.as<uint8_t>(),
              keep_host.as<uint8_t>(), &dev_bytes, &host_bytes);
  buf_->device = std::move(keep_device);
  buf_->host = std::move(keep_host);

  // rope_scaling's frequencies; its attention factor scales cos and sin
  // (qkv_prepare's rope_scale), as on the CPU.
  const std::vector<double> inv_freq = rope_frequencies(config_).inv_freq;
  device_->make_current();
  if (cudaMemcpy(buf_->inv_freq, inv_freq.data(), inv_freq.size() * sizeof(double),
                 cudaMemcpyHostToDevice) != cudaSuccess) {
    return device_->check("uploading the RoPE frequencies");
  }
  kv_pool_ = std::make_shared<KvPool>();
  kv_pool_->reserved_tokens = options_.kv_cache_tokens;
  DMOE_ASSIGN_OR_RETURN(
      kv_pool_->reserved,
      device_->allocate(
          kv_cache_bytes(config_, options_.kv_cache_tokens),
          "the KV cache (" + std::to_string(options_.kv_cache_tokens) + " positions)"));
  deferred_.assign(static_cast<size_t>(config_.n_layers), 0);
  const int64_t P = options_.max_batch_tokens * std::max<int64_t>(config_.n_experts_per_token, 1);
  routing_.expert_ids.reserve(static_cast<size_t>(P));
  routing_.weights.reserve(static_cast<size_t>(P));
  return Status::ok();
}

std::string CudaForward::describe() const {
  return device_->label() + (options_.experts_on_device ? ", experts on the device" : "");
}

Result<KvCache> CudaForward::new_cache(int64_t capacity) {
  if (capacity <= 0) return invalid_argument("KV cache needs a positive capacity");
  {
    std::lock_guard<std::mutex> lock(kv_pool_->mutex);
    if (!kv_pool_->leased && capacity <= kv_pool_->reserved_tokens) {
      kv_pool_->leased = true;
      auto storage =
          std::make_unique<CudaKvStorage>(kv_pool_, DeviceMemory(), kv_pool_->reserved.as<float>());
      return KvCache::external(config_.n_layers, config_.cache_key_dim(), config_.cache_value_dim(),
                               capacity, std::move(storage));
    }
  }
  DMOE_ASSIGN_OR_RETURN(
      DeviceMemory memory,
      device_->allocate(kv_cache_bytes(config_, capacity),
                        "a KV cache of " + std::to_string(capacity) + " positions"));
  float* base = memory.as<float>();
  auto storage = std::make_unique<CudaKvStorage>(kv_pool_, std::move(memory), base);
  return KvCache::external(config_.n_layers, config_.cache_key_dim(), config_.cache_value_dim(),
                           capacity, std::move(storage));
}

Result<float*> CudaForward::cache_base(KvCache& cache) const {
  const auto* storage = dynamic_cast<const CudaKvStorage*>(cache.external_storage());
  if (storage == nullptr || storage->pool() != kv_pool_.get()) {
    return invalid_argument("this KV cache was not made by this model's " + device_->label() +
                            " backend; make it with the model's Transformer::new_cache");
  }
  return storage->base();
}

Status CudaForward::begin(std::span<const int32_t> tokens, KvCache& cache) {
  if (capturing_) {  // a forward that failed half-way: drop its capture
    cudaGraph_t abandoned = nullptr;
    cudaStreamEndCapture(device_->stream(), &abandoned);
    if (abandoned != nullptr) cudaGraphDestroy(abandoned);
    cudaGetLastError();
    capturing_ = false;
  }
  DMOE_ASSIGN_OR_RETURN(kv_base_, cache_base(cache));
  kv_capacity_ = cache.capacity();
  n_ = static_cast<int64_t>(tokens.size());
  if (n_ > options_.max_batch_tokens) {
    return invalid_argument("batch of " + std::to_string(n_) + " tokens exceeds the " +
                            std::to_string(options_.max_batch_tokens) + " the workspace holds");
  }
  device_->make_current();
  const kc::Stream s = device_->stream();
  std::memcpy(buf_->h_ids, tokens.data(), tokens.size_bytes());
  *buf_->h_pos0 = static_cast<int32_t>(cache.n_past());
  capturing_ = replaying_ = false;
  if (n_ == 1 && options_.experts_on_device && options_.cuda_graphs) {
    if (graph_ && graph_->kv_base == kv_base_ && graph_->kv_capacity == kv_capacity_) {
      replaying_ = true;  // the graph copies the token and position itself
      return Status::ok();
    }
    graph_.reset();
    const cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) return device_->check("starting a decode graph capture");
    capturing_ = true;
  }
  cudaMemcpyAsync(buf_->ids, buf_->h_ids, tokens.size_bytes(), cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(buf_->pos0, buf_->h_pos0, sizeof(int32_t), cudaMemcpyHostToDevice, s);
  kc::embedding(weights_->embed(), config_.hidden_size, buf_->ids, n_, buf_->h, s);
  kc::rope_tables(buf_->inv_freq, config_.rope_dim() / 2, buf_->pos0, n_, buf_->cos, buf_->sin, s);
  return device_->check("embedding");
}

void CudaForward::norm_rows(const float* weight, int64_t first_row, int64_t n_rows, kc::Stream s) {
  const int64_t H = config_.hidden_size;
  kc::RmsNormArgs norm;
  norm.x = buf_->h + first_row * H;
  norm.x_stride = H;
  norm.weight = weight;
  norm.n_rows = n_rows;
  norm.width = H;
  norm.eps = config_.rms_norm_eps;
  norm.out = buf_->xn;
  norm.out_stride = H;
  norm.out_bf16 = buf_->xn_b;
  norm.out_bf16_stride = H;
  kc::rmsnorm(norm, s);
}

float* CudaForward::layer_cache(int64_t layer) const {
  const int64_t width = config_.cache_key_dim() + config_.cache_value_dim();
  return kv_base_ + layer * kv_capacity_ * width;
}

Status CudaForward::attention(int64_t layer, KvCache& /*cache*/) {
  if (replaying_) return Status::ok();
  const DeviceLayer& lw = weights_->layer(layer);
  const DeviceAttention& aw = lw.attention;
  const kc::Stream s = device_->stream();
  const int64_t H = config_.hidden_size, Q = config_.q_dim(), KV = config_.kv_dim();

  norm_rows(lw.input_norm, 0, n_, s);
  if (config_.attention == AttentionKind::kLatent) {
    LatentBatch b;
    b.n_tokens = n_;
    b.x_bf16 = buf_->xn_b;
    b.d_pos0 = buf_->pos0;
    b.cos = buf_->cos;
    b.sin = buf_->sin;
    b.rope_scale = static_cast<float>(rope_frequencies(config_).attention_factor);
    b.cache = layer_cache(layer);
    b.h = buf_->h;
    b.q = buf_->q;
    b.q_a = buf_->q_a;
    b.q_a_bf16 = buf_->q_a_b;
    b.kv_a = buf_->kv_a;
    b.q_lat = buf_->q_lat;
    b.o_lat = buf_->o_lat;
    b.attn = buf_->attn;
    b.attn_bf16 = buf_->attn_b;
    latent_attention(config_, aw, b, s);
    return device_->check("latent attention");
  }

  kc::MatmulArgs qkv;
  qkv.x_bf16 = buf_->xn_b;
  qkv.x_stride = H;
  qkv.n_tokens = n_;
  qkv.cols = H;
  qkv.n_problems = 3;
  qkv.problems[0] = {aw.q, Q, aw.q_bias, buf_->q, Q, false};
  qkv.problems[1] = {aw.k, KV, aw.k_bias, buf_->k, KV, false};
  qkv.problems[2] = {aw.v, KV, aw.v_bias, buf_->v, KV, false};
  kc::matmul(qkv, s);

  if (config_.qk_norm == QkNormKind::kFull) {
    kc::RmsNormArgs qn;
    qn.x = buf_->q;
    qn.x_stride = Q;
    qn.weight = aw.q_norm;
    qn.n_rows = n_;
    qn.width = Q;
    qn.eps = config_.rms_norm_eps;
    qn.out = buf_->q;
    qn.out_stride = Q;
    kc::rmsnorm(qn, s);
    kc::RmsNormArgs kn = qn;
    kn.x = buf_->k;
    kn.x_stride = KV;
    kn.weight = aw.k_norm;
    kn.width = KV;
    kn.out = buf_->k;
    kn.out_stride = KV;
    kc::rmsnorm(kn, s);
  }
  float* k_cache = layer_cache(layer);
  float* v_cache = k_cache + kv_capacity_ * KV;
  kc::QkvPrepareArgs prep;
  prep.q = buf_->q;
  prep.q_stride = Q;
  prep.k = buf_->k;
  prep.v = buf_->v;
  prep.kv_stride = KV;
  prep.k_cache = k_cache;
  prep.v_cache = v_cache;
  prep.d_pos0 = buf_->pos0;
  prep.n_tokens = n_;
  prep.n_heads = config_.n_heads;
  prep.n_kv_heads = config_.n_kv_heads;
  prep.head_dim = config_.head_dim;
  if (config_.qk_norm == QkNormKind::kPerHead) {
    prep.q_norm = aw.q_norm;
    prep.k_norm = aw.k_norm;
  }
  prep.eps = config_.rms_norm_eps;
  prep.cos = buf_->cos;
  prep.sin = buf_->sin;
  prep.rotary_dim = config_.rope_dim();
  prep.pairs = config_.rope_layout == RopeLayout::kPairs;
  prep.rope_scale = static_cast<float>(rope_frequencies(config_).attention_factor);
  kc::qkv_prepare(prep, s);

  kc::AttentionArgs at;
  at.q = buf_->q;
  at.q_stride = Q;
  at.k_cache = k_cache;
  at.v_cache = v_cache;
  at.kv_stride = KV;
  at.d_pos0 = buf_->pos0;
  at.n_tokens = n_;
  at.n_heads = config_.n_heads;
  at.n_kv_heads = config_.n_kv_heads;
  at.head_dim = config_.head_dim;
  at.scale = attention_softmax_scale(config_);
  at.window = config_.is_sliding(layer) ? config_.sliding_window : 0;
  at.sinks = aw.sinks;
  at.partials = buf_->attn_partial;
  at.out = buf_->attn;
  at.out_stride = Q;
  at.out_bf16 = buf_->attn_b;
  kc::attention(at, s);

  kc::MatmulArgs o;
  o.x_bf16 = buf_->attn_b;
  o.x_stride = Q;
  o.n_tokens = n_;
  o.cols = Q;
  o.problems[0] = {aw.o, H, aw.o_bias, buf_->h, H, true};
  kc::matmul(o, s);
  return device_->check("attention");
}

void CudaForward::run_expert_groups(const uint16_t* const* gate, const uint16_t* const* up,
                                    const uint16_t* const* down, int64_t n_groups, int64_t inter,
                                    const int32_t* ids, const float* weights, int64_t top_k,
                                    int64_t routed_layer) {
  const kc::Stream s = device_->stream();
  // One decode token: its experts are distinct, so the router's output is
  // used as it is (no grouping launch).
  const bool direct = n_ == 1;
  kc::GroupArgs g;
  g.ids = ids;
  g.weights = weights;
  g.n_pairs = n_ * top_k;
  g.top_k = top_k;
  g.n_groups = n_groups;
  g.group_offsets = buf_->offsets;
  g.pair_token = buf_->pair_token;
  g.pair_weight = buf_->pair_weight;
  g.pair_group = buf_->pair_group;
  g.pair_pos = buf_->pair_pos;
  g.tile_group = buf_->tile_group;
  g.tile_row0 = buf_->tile_row0;
  g.n_tiles = buf_->n_tiles;
  if (!direct) kc::group_pairs(g, s);

  kc::ExpertFfnArgs f;
  f.gate = gate;
  f.up = up;
  f.down = down;
  f.n_groups = n_groups;
  f.hidden = config_.hidden_size;
  f.inter = inter;
  f.group_offsets = buf_->offsets;
  f.pair_token = buf_->pair_token;
  f.pair_group = buf_->pair_group;
  f.tile_group = buf_->tile_group;
  f.tile_row0 = buf_->tile_row0;
  f.n_tiles = buf_->n_tiles;
  f.max_pairs = n_ * top_k;
  f.direct = direct;
  f.direct_ids = ids;
  f.direct_top_k = top_k;
  if (routed_layer >= 0) {
    f.gate_bias = weights_->gate_bias_table(device_index_, routed_layer);
    f.up_bias = weights_->up_bias_table(device_index_, routed_layer);
    f.down_bias = weights_->down_bias_table(device_index_, routed_layer);
    f.clamped = config_.expert_activation == ExpertActivation::kClampedSwiGLU;
    f.alpha = config_.swiglu_alpha;
    f.limit = config_.swiglu_limit;
  }
  f.x = buf_->xn_b;
  f.x_stride = config_.hidden_size;
  f.h = buf_->inter;
  f.d = buf_->d;
  kc::expert_ffn(f, /*batched=*/n_ > kc::kGemvMaxTokens, s);

  kc::CombineArgs c;
  c.d = buf_->d;
  c.hidden = config_.hidden_size;
  c.pos = direct ? nullptr : buf_->pair_pos;
  c.weights = weights;
  c.n_tokens = n_;
  c.top_k = top_k;
  c.out = buf_->h;
  c.out_stride = config_.hidden_size;
  kc::moe_combine(c, s);
}

Status CudaForward::moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) {
  if (replaying_) {  // the graph copies the routing back
    if (observer) {
      deferred_[static_cast<size_t>(layer)] = 1;
      deferred_observer_ = &observer;
    }
    return Status::ok();
  }
  const DeviceLayer& lw = weights_->layer(layer);
  const kc::Stream s = device_->stream();
  const int64_t H = config_.hidden_size;
  const int64_t E = config_.n_experts;
  const int64_t K = config_.n_experts_per_token;

  norm_rows(lw.post_attention_norm, 0, n_, s);

  // The router sees f32 activations, as on the CPU.
  kc::MatmulArgs router;
  router.x_f32 = buf_->xn;
  router.x_stride = H;
  router.n_tokens = n_;
  router.cols = H;
  router.problems[0] = {lw.router, E, lw.router_bias, buf_->router_logits, E, false};
  kc::gemv(router, s);
  kc::RouterArgs r;
  r.logits = buf_->router_logits;
  r.n_tokens = n_;
  r.n_experts = E;
  r.top_k = K;
  r.order = config_.router_scoring == RouterScoring::kSoftmaxThenTopK
                ? kc::RouterOrder::kSoftmaxThenTopK
            : config_.router_scoring == RouterScoring::kSigmoid ? kc::RouterOrder::kSigmoid
                                                                : kc::RouterOrder::kTopKThenSoftmax;
  r.norm_topk_prob = config_.norm_topk_prob;
  r.norm_epsilon = config_.topk_norm_epsilon;
  r.choice_bias = lw.router_choice_bias;
  r.n_group = config_.n_group;
  r.topk_group = config_.topk_group;
  r.group_top2_sum = config_.group_score == GroupScore::kTop2Sum;
  r.routed_scale = static_cast<float>(config_.routed_scaling_factor);
  r.ids = buf_->r_ids;
  r.weights = buf_->r_weights;
  kc::router_topk(r, s);
  if (lw.shared_gate != nullptr) shared_expert(layer);

  const int64_t P = n_ * K;
  const size_t slot = static_cast<size_t>(layer * options_.max_batch_tokens * K);
  if (options_.experts_on_device) {
    run_expert_groups(weights_->gate_table(device_index_, layer),
                      weights_->up_table(device_index_, layer),
                      weights_->down_table(device_index_, layer), E, config_.moe_intermediate_size,
                      buf_->r_ids, buf_->r_weights, K, layer);
    if (observer || capturing_) {
      cudaMemcpyAsync(buf_->h_route_ids + slot, buf_->r_ids, static_cast<size_t>(P) * 4,
                      cudaMemcpyDeviceToHost, s);
      cudaMemcpyAsync(buf_->h_route_weights + slot, buf_->r_weights, static_cast<size_t>(P) * 4,
                      cudaMemcpyDeviceToHost, s);
      if (observer) {
        deferred_[static_cast<size_t>(layer)] = 1;
        deferred_observer_ = &observer;
      }
    }
    return device_->check("MoE layer");
  }

  // Through the executor: routing and activations to the host first.
  cudaMemcpyAsync(buf_->h_route_ids + slot, buf_->r_ids, static_cast<size_t>(P) * 4,
                  cudaMemcpyDeviceToHost, s);
  cudaMemcpyAsync(buf_->h_route_weights + slot, buf_->r_weights, static_cast<size_t>(P) * 4,
                  cudaMemcpyDeviceToHost, s);
  cudaMemcpyAsync(buf_->h_xn, buf_->xn, static_cast<size_t>(n_ * H) * sizeof(float),
                  cudaMemcpyDeviceToHost, s);
  DMOE_RETURN_IF_ERROR(device_->synchronize("router"));
  routing_.n_tokens = n_;
  routing_.top_k = K;
  routing_.expert_ids.assign(buf_->h_route_ids + slot, buf_->h_route_ids + slot + P);
  routing_.weights.assign(buf_->h_route_weights + slot, buf_->h_route_weights + slot + P);
  if (observer) observer(layer, routing_);
  std::fill(buf_->h_delta, buf_->h_delta + n_ * H, 0.0f);
  DMOE_RETURN_IF_ERROR(executor.run_layer(layer, buf_->h_xn, n_, H, routing_, buf_->h_delta));
  device_->make_current();
  cudaMemcpyAsync(buf_->delta, buf_->h_delta, static_cast<size_t>(n_ * H) * sizeof(float),
                  cudaMemcpyHostToDevice, s);
  kc::axpy(1.0f, buf_->delta, buf_->h, n_ * H, s);
  return device_->check("adding the experts' output");
}

// The shared expert of an MoE layer, part of the dense model: one group
// over every token, weighted by sigmoid(shared_expert_gate . x) when the
// model gates it (Qwen2-MoE), added into the residual stream -- as
// CpuForward::shared_expert does.
void CudaForward::shared_expert(int64_t layer) {
  const DeviceLayer& lw = weights_->layer(layer);
  const kc::Stream s = device_->stream();
  const float* weights = nullptr;
  if (lw.shared_expert_gate != nullptr) {
    kc::MatmulArgs gate;  // f32 activations, as the CPU computes this gate
    gate.x_f32 = buf_->xn;
    gate.x_stride = config_.hidden_size;
    gate.n_tokens = n_;
    gate.cols = config_.hidden_size;
    gate.problems[0] = {lw.shared_expert_gate, 1, nullptr, buf_->shared_weight, 1, false};
    kc::gemv(gate, s);
    kc::sigmoid(buf_->shared_weight, n_, s);
    weights = buf_->shared_weight;
  }
  run_expert_groups(lw.shared_gate, lw.shared_up, lw.shared_down, 1,
                    config_.shared_intermediate_size, /*ids=*/nullptr, weights, /*top_k=*/1);
}

Status CudaForward::dense_mlp(int64_t layer) {
  if (replaying_) return Status::ok();
  const DeviceLayer& lw = weights_->layer(layer);
  norm_rows(lw.post_attention_norm, 0, n_, device_->stream());
  run_expert_groups(lw.dense_gate, lw.dense_up, lw.dense_down, 1, config_.dense_intermediate_size,
                    /*ids=*/nullptr, /*weights=*/nullptr, /*top_k=*/1);
  return device_->check("dense MLP");
}

Status CudaForward::end_capture_and_launch() {
  const kc::Stream s = device_->stream();
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamEndCapture(s, &graph);
  if (e != cudaSuccess) return device_->check("capturing the decode graph");
  auto g = std::make_unique<Graph>();
  e = cudaGraphInstantiate(&g->exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) return device_->check("instantiating the decode graph");
  g->kv_base = kv_base_;
  g->kv_capacity = kv_capacity_;
  graph_ = std::move(g);
  replaying_ = true;
  return Status::ok();
}

Status CudaForward::finish(int64_t first_row, int64_t n_rows, float* logits) {
  const kc::Stream s = device_->stream();
  const int64_t H = config_.hidden_size, V = config_.vocab_size;
  const int64_t wanted_rows = n_rows;
  if (replaying_) {
    // Captured with the last row's logits; first_row is 0 for one token.
    if (cudaGraphLaunch(graph_->exec, s) != cudaSuccess) return device_->check("decode graph");
  } else if (n_rows > 0 || capturing_) {
    if (capturing_) {
      first_row = 0;
      n_rows = 1;
    }
    norm_rows(weights_->final_norm(), first_row, n_rows, s);
    kc::MatmulArgs head;
    head.x_bf16 = buf_->xn_b;
    head.x_stride = H;
    head.n_tokens = n_rows;
    head.cols = H;
    head.problems[0] = {weights_->lm_head(), V, nullptr, buf_->logits, V, false};
    kc::matmul(head, s);
    cudaMemcpyAsync(buf_->h_logits, buf_->logits, static_cast<size_t>(n_rows * V) * sizeof(float),
                    cudaMemcpyDeviceToHost, s);
    if (capturing_) {
      DMOE_RETURN_IF_ERROR(end_capture_and_launch());
      if (cudaGraphLaunch(graph_->exec, s) != cudaSuccess) return device_->check("decode graph");
    }
  }
  DMOE_RETURN_IF_ERROR(device_->synchronize("forward pass"));
  if (wanted_rows > 0) {
    std::memcpy(logits, buf_->h_logits, static_cast<size_t>(wanted_rows * V) * sizeof(float));
  }
  if (deferred_observer_ != nullptr) {
    const int64_t K = config_.n_experts_per_token;
    for (int64_t l = 0; l < config_.n_layers; ++l) {
      if (!deferred_[static_cast<size_t>(l)]) continue;
      deferred_[static_cast<size_t>(l)] = 0;
      const size_t slot = static_cast<size_t>(l * options_.max_batch_tokens * K);
      routing_.n_tokens = n_;
      routing_.top_k = K;
      routing_.expert_ids.assign(buf_->h_route_ids + slot, buf_->h_route_ids + slot + n_ * K);
      routing_.weights.assign(buf_->h_route_weights + slot, buf_->h_route_weights + slot + n_ * K);
      if (*deferred_observer_) (*deferred_observer_)(l, routing_);
    }
    deferred_observer_ = nullptr;
  }
  return Status::ok();
}

}  // namespace dancemoe::backend::cuda
