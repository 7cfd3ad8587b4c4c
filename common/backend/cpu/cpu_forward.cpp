#include "common/backend/cpu/cpu_forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/base/check.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe::backend {
namespace {

// A work chunk of a projection streams about this many weight bytes: long
// enough that starting a stream (prefetcher ramp-up) is cheap, short enough
// to balance across threads (ThreadPool::parallel_for).
constexpr int64_t kChunkBytes = 1 << 20;

int64_t rows_per_chunk(const kernels::WeightView& w) {
  return std::max<int64_t>(kernels::kMatmulRowAlign,
                           kChunkBytes / kernels::weight_row_bytes(w.type, w.cols));
}

}  // namespace

void CpuForward::grow(std::vector<float>* v, int64_t n) {
  if (v->size() < static_cast<size_t>(n)) v->resize(static_cast<size_t>(n));
}

CpuForward::CpuForward(const ModelConfig& config, const DenseWeights& weights,
                       ComputePrecision precision, ThreadPool& pool, KvElement kv_element)
    : config_(config),
      weights_(weights),
      precision_(precision),
      kv_element_(kv_element),
      pool_(pool),
      dense_mlp_(pool, precision),
      rope_(rope_frequencies(config)),
      softmax_scale_(attention_softmax_scale(config)) {
  attention_scratch_.resize(static_cast<size_t>(pool_.size()));
}

std::string CpuForward::describe() const {
  return "cpu (" + std::string(kernels::cpu_level_name(kernels::cpu_kernels().level)) + ", " +
         std::to_string(pool_.size()) + " threads)";
}

// Scratch grows to whatever batch comes: no limit.
int64_t CpuForward::max_batch_tokens() const { return INT64_MAX; }

Result<KvCache> CpuForward::new_cache(int64_t capacity) {
  return KvCache::create(config_.n_layers, config_.cache_key_dim(), config_.cache_value_dim(),
                         capacity, host_kv_element(config_, kv_element_));
}

void CpuForward::prepare(int64_t n, int64_t capacity) {
  const ComputePrecision precision = precision_;
  grow(&h_, n * config_.hidden_size);
  xn_.resize(n, config_.hidden_size, precision);
  grow(&q_, n * config_.q_dim());
  if (config_.attention == AttentionKind::kGrouped) {
    grow(&k_, n * config_.kv_dim());
    grow(&v_, n * config_.kv_dim());
  }
  attn_.resize(n, config_.attention_out_dim(), precision);
  grow(&proj_, n * config_.hidden_size);
  grow(&router_logits_, n * std::max<int64_t>(config_.n_experts, 1));
  for (auto& scratch : attention_scratch_) grow(&scratch, capacity);
}

void CpuForward::rotate(float* x, int64_t n_heads, int64_t stride, int64_t t) const {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const int64_t dim = config_.rope_dim();
  const int64_t half = dim / 2;
  const float* cos = rope_cos_.data() + t * half;
  const float* sin = rope_sin_.data() + t * half;
  if (config_.rope_layout == RopeLayout::kPairs) {
    // (x[2i], x[2i + 1]) pairs -> halves, in place, as DeepSeek's code does
    // before rotating: q . k is unchanged since q and k are permuted alike.
    thread_local std::vector<float> tmp;
    tmp.resize(static_cast<size_t>(dim));
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * stride;
      for (int64_t i = 0; i < half; ++i) {
        tmp[static_cast<size_t>(i)] = head[2 * i];
        tmp[static_cast<size_t>(half + i)] = head[2 * i + 1];
      }
      std::memcpy(head, tmp.data(), static_cast<size_t>(dim) * sizeof(float));
    }
  }
  if (dim == stride) {
    k.rope(x, n_heads, dim, cos, sin);
    return;
  }
  for (int64_t h = 0; h < n_heads; ++h) k.rope(x + h * stride, 1, dim, cos, sin);
}

void CpuForward::project(const kernels::WeightView& w, const ActivationsView& x, float* y,
                         int64_t y_stride, WeightPath path) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const int64_t n_chunks = chunk_count(w.rows, rows_per_chunk(w), pool_.size());
  pool_.parallel_for(n_chunks, [&](int64_t chunk, int) {
    const Range r = split_range(w.rows, chunk, n_chunks, kernels::kMatmulRowAlign);
    matmul_rows(k, w, x, n_, y, y_stride, r.begin, r.end, path);
  });
}

Status CpuForward::begin(std::span<const int32_t> tokens, KvCache& cache) {
  const SequenceRows one{tokens, &cache};
  return begin_sequences(std::span(&one, 1));
}

Status CpuForward::begin_sequences(std::span<const SequenceRows> sequences) {
  int64_t n = 0;
  int64_t capacity = 0;
  segments_.clear();
  for (const SequenceRows& seq : sequences) {
    if (seq.cache == nullptr || seq.cache->external_storage() != nullptr) {
      return invalid_argument(
          "this KV cache was made by another backend; make it with the model's "
          "Transformer::new_cache");
    }
    // Latent attention reads its compressed rows as f32 (host_kv_element).
    if (config_.attention == AttentionKind::kLatent && seq.cache->element() != KvElement::kF32) {
      return invalid_argument("latent attention needs an f32 KV cache");
    }
    const auto rows = static_cast<int64_t>(seq.tokens.size());
    segments_.push_back({n, rows, seq.cache, seq.cache->n_past()});
    n += rows;
    capacity = std::max(capacity, seq.cache->capacity());
  }
  const int64_t hidden = config_.hidden_size;
  n_ = n;
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  prepare(n, capacity);
  row_segment_.resize(static_cast<size_t>(n));
  const int64_t half = config_.rope_dim() / 2;
  grow(&rope_cos_, n * half);
  grow(&rope_sin_, n * half);
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    std::fill(row_segment_.begin() + s.first_row, row_segment_.begin() + s.first_row + s.n_rows,
              static_cast<int32_t>(i));
    rope_tables(rope_, s.pos0, s.n_rows, &rope_cos_part_, &rope_sin_part_);
    std::copy_n(rope_cos_part_.begin(), s.n_rows * half, rope_cos_.begin() + s.first_row * half);
    std::copy_n(rope_sin_part_.begin(), s.n_rows * half, rope_sin_.begin() + s.first_row * half);
  }

  // Embedding rows, widened to f32.
  const kernels::WeightView& embed = weights_.embed();
  const int64_t row_bytes = kernels::weight_row_bytes(embed.type, hidden);
  int64_t t = 0;
  for (const SequenceRows& seq : sequences) {
    for (const int32_t token : seq.tokens) {
      const auto* row =
          static_cast<const uint8_t*>(embed.data) + static_cast<int64_t>(token) * row_bytes;
      float* dst = h_.data() + t * hidden;
      ++t;
      switch (embed.type) {
        case kernels::WeightType::kF32:
          std::memcpy(dst, row, static_cast<size_t>(hidden) * sizeof(float));
          break;
        case kernels::WeightType::kBF16:
          k.bf16_to_f32(reinterpret_cast<const uint16_t*>(row), hidden, dst);
          break;
        case kernels::WeightType::kF16:
          k.f16_to_f32(reinterpret_cast<const uint16_t*>(row), hidden, dst);
          break;
        default:  // block formats
          kernels::dequantize_values(embed.type, row, hidden, dst);
          break;
      }
    }
  }

  return Status::ok();
}

// Everything a batch's later layers read is its rows' residual stream, their
// sequences and their rotary tables; the rest is per-layer scratch that the
// next layer rewrites (and that only grows, so the first batch's sizes hold).
void CpuForward::swap_batch() {
  std::swap(n_, suspended_.n);
  segments_.swap(suspended_.segments);
  row_segment_.swap(suspended_.row_segment);
  rope_cos_.swap(suspended_.rope_cos);
  rope_sin_.swap(suspended_.rope_sin);
  h_.swap(suspended_.h);
}

void CpuForward::suspend() {
  DMOE_CHECK(!suspended_.active);
  swap_batch();
  suspended_.active = true;
}

void CpuForward::resume() {
  DMOE_CHECK(suspended_.active);
  swap_batch();
  suspended_.active = false;
}

// xn_ = rmsnorm(h_) row by row, with `weight`.
void CpuForward::norm_rows(const float* weight) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const int64_t hidden = config_.hidden_size;
  for (int64_t t = 0; t < n_; ++t) {
    k.rmsnorm(h_.data() + t * hidden, weight, hidden, config_.rms_norm_eps, xn_.row(t));
  }
}

Status CpuForward::attention(int64_t layer, KvCache& cache) {
  if (segments_.size() != 1 || segments_[0].cache != &cache) {
    return invalid_argument("attention: the cache is not the one begin() was given");
  }
  return attention_sequences(layer);
}

Status CpuForward::attention_sequences(int64_t layer) {
  if (config_.attention == AttentionKind::kLatent) return latent_attention(layer);
  project_qkv(layer);
  position_and_cache(layer);
  attend(layer);
  project_out(layer);
  return Status::ok();
}

// q, k, v of every token from the normalised hidden state.
void CpuForward::project_qkv(int64_t layer) {
  const int64_t n = n_;
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const LayerWeights& lw = weights_.layer(layer);
  const AttentionWeights& aw = lw.attention;
  const int64_t q_dim = config_.q_dim();
  const int64_t kv_dim = config_.kv_dim();
  norm_rows(lw.input_norm);
  xn_.prepare(k, n, {aw.q.type, aw.k.type, aw.v.type});
  const ActivationsView x = xn_.view();
  const int n_threads = pool_.size();
  const int64_t n_q_chunks = chunk_count(q_dim, rows_per_chunk(aw.q), n_threads);
  const int64_t n_kv_chunks = chunk_count(kv_dim, rows_per_chunk(aw.k), n_threads);
  pool_.parallel_for(n_q_chunks + 2 * n_kv_chunks, [&](int64_t chunk, int) {
    if (chunk < n_q_chunks) {
      const Range r = split_range(q_dim, chunk, n_q_chunks, kernels::kMatmulRowAlign);
      matmul_rows(k, aw.q, x, n, q_.data(), q_dim, r.begin, r.end);
      return;
    }
    chunk -= n_q_chunks;
    const bool is_k = chunk < n_kv_chunks;
    const Range r = split_range(kv_dim, is_k ? chunk : chunk - n_kv_chunks, n_kv_chunks,
                                kernels::kMatmulRowAlign);
    matmul_rows(k, is_k ? aw.k : aw.v, x, n, is_k ? k_.data() : v_.data(), kv_dim, r.begin, r.end,
                WeightPath::kExactWeights);  // written to the KV cache
  });
}

// Biases, q/k norms and rotary positions, then k and v into the cache.
void CpuForward::position_and_cache(int64_t layer) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const AttentionWeights& aw = weights_.layer(layer).attention;
  const int64_t q_dim = config_.q_dim();
  const int64_t kv_dim = config_.kv_dim();
  const int64_t head_dim = config_.head_dim;
  for (int64_t t = 0; t < n_; ++t) {
    const Segment& s = segments_[static_cast<size_t>(row_segment_[static_cast<size_t>(t)])];
    const int64_t pos = s.pos0 + t - s.first_row;
    float* q = q_.data() + t * q_dim;
    float* kk = k_.data() + t * kv_dim;
    float* v = v_.data() + t * kv_dim;
    if (aw.q_bias) k.axpy(1.0f, aw.q_bias, q, q_dim);
    if (aw.k_bias) k.axpy(1.0f, aw.k_bias, kk, kv_dim);
    if (aw.v_bias) k.axpy(1.0f, aw.v_bias, v, kv_dim);
    if (config_.qk_norm == QkNormKind::kPerHead) {
      for (int64_t h = 0; h < config_.n_heads; ++h) {
        k.rmsnorm(q + h * head_dim, aw.q_norm, head_dim, config_.rms_norm_eps, q + h * head_dim);
      }
      for (int64_t h = 0; h < config_.n_kv_heads; ++h) {
        k.rmsnorm(kk + h * head_dim, aw.k_norm, head_dim, config_.rms_norm_eps, kk + h * head_dim);
      }
    } else if (config_.qk_norm == QkNormKind::kFull) {
      k.rmsnorm(q, aw.q_norm, q_dim, config_.rms_norm_eps, q);
      k.rmsnorm(kk, aw.k_norm, kv_dim, config_.rms_norm_eps, kk);
    }
    rotate(q, config_.n_heads, head_dim, t);
    rotate(kk, config_.n_kv_heads, head_dim, t);
    if (s.cache->element() == KvElement::kBF16) {
      k.f32_to_bf16(kk, kv_dim, s.cache->keys_bf16(layer) + pos * kv_dim);
      k.f32_to_bf16(v, kv_dim, s.cache->values_bf16(layer) + pos * kv_dim);
    } else {
      std::memcpy(s.cache->keys(layer) + pos * kv_dim, kk,
                  static_cast<size_t>(kv_dim) * sizeof(float));
      std::memcpy(s.cache->values(layer) + pos * kv_dim, v,
                  static_cast<size_t>(kv_dim) * sizeof(float));
    }
  }
}

// Causal attention: token t of a sequence sees its cache's positions
// [0, pos0 + t]. Work items
// are (token, query head); chunk boundaries fall on KV-head groups so a
// kernel can share each cached key among the heads that read it.
void CpuForward::attend(int64_t layer) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const int64_t n = n_;
  const int64_t q_dim = config_.q_dim();
  const int64_t kv_dim = config_.kv_dim();
  const int64_t head_dim = config_.head_dim;
  const int64_t n_heads = config_.n_heads;
  const int64_t group = n_heads / config_.n_kv_heads;
  const float scale = softmax_scale_;
  const int64_t window = config_.is_sliding(layer) ? config_.sliding_window : 0;
  const float* sinks = weights_.layer(layer).attention.sinks;
  const int64_t n_items = n * n_heads;
  int64_t work = 0;  // (token, position) pairs
  for (const Segment& s : segments_) work += s.n_rows * (s.pos0 + s.n_rows);
  // Short contexts are cheaper on one thread than a pool round trip: split
  // from ~32K query-key products (medium preset: 32 positions). From 256
  // positions (the old bound) one decode token's attention ran on one thread
  // while the others waited: `dancemoe bench` medium Q8_0, 128-token prompt,
  // decode 4 interleaved rounds 87.6 / 98.7 / 95.3 / 89.1 -> 96.9 / 109.7 /
  // 94.7 / 94.0 tok/s (Zen 4, 2 threads). Each head is computed the same
  // either way. A chunk is a token's heads where there are tokens enough
  // for every thread: one kernel call then reads whole rows of its cache
  // (kernels' attention), not each KV head's columns in turn. Fewer tokens
  // than threads (a lone sequence's decode): one chunk per thread, each a
  // contiguous range of its heads -- a 2000-position small-preset decode
  // spent 68-72 instead of 84-103 us a layer in attention (1 KV head a
  // chunk before), the medium preset's within noise.
  const int64_t groups = n_items / group;
  const int n_threads = pool_.size();
  int64_t n_attention_chunks = 1;
  if (work * n_heads * head_dim >= 32768) {
    n_attention_chunks = n < n_threads ? std::min<int64_t>(groups, n_threads)
                                       : chunk_count(groups, n_heads / group, n_threads);
  }
  pool_.parallel_for(n_attention_chunks, [&](int64_t chunk, int thread_idx) {
    const Range r = split_range(n_items, chunk, n_attention_chunks, group);
    float* scratch = attention_scratch_[static_cast<size_t>(thread_idx)].data();
    for (int64_t i = r.begin; i < r.end;) {
      const int64_t t = i / n_heads;
      const int64_t head_end = std::min(r.end - t * n_heads, n_heads);
      const Segment& s = segments_[static_cast<size_t>(row_segment_[static_cast<size_t>(t)])];
      const int64_t pos = s.pos0 + t - s.first_row;
      // Token t sees positions [first, pos]: all of them, or the window's
      // last ones on a sliding layer.
      const int64_t first = window > 0 ? std::max<int64_t>(0, pos + 1 - window) : 0;
      kernels::AttentionArgs args;
      args.q = q_.data() + t * q_dim;
      if (s.cache->element() == KvElement::kBF16) {
        args.k_bf16 = s.cache->keys_bf16(layer) + first * kv_dim;
        args.v_bf16 = s.cache->values_bf16(layer) + first * kv_dim;
      } else {
        args.k = s.cache->keys(layer) + first * kv_dim;
        args.v = s.cache->values(layer) + first * kv_dim;
      }
      args.kv_stride = kv_dim;
      args.n_ctx = pos + 1 - first;
      args.sinks = sinks;
      args.n_heads = n_heads;
      args.n_kv_heads = config_.n_kv_heads;
      args.head_dim = head_dim;
      args.scale = scale;
      args.out = attn_.row(t);
      args.scratch = scratch;
      args.head_begin = i - t * n_heads;
      args.head_end = head_end;
      k.attention(args);
      i = t * n_heads + head_end;
    }
  });
  attn_.prepare(k, n, {weights_.layer(layer).attention.o.type});
}

// The output projection, added into the residual stream h_.
void CpuForward::project_out(int64_t layer) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const AttentionWeights& aw = weights_.layer(layer).attention;
  const int64_t n = n_;
  const int64_t hidden = config_.hidden_size;
  const ActivationsView a = attn_.view();
  const int64_t n_o_chunks = chunk_count(hidden, rows_per_chunk(aw.o), pool_.size());
  pool_.parallel_for(n_o_chunks, [&](int64_t chunk, int) {
    const Range r = split_range(hidden, chunk, n_o_chunks, kernels::kMatmulRowAlign);
    matmul_rows(k, aw.o, a, n, proj_.data(), hidden, r.begin, r.end);
    for (int64_t t = 0; t < n; ++t) {
      if (aw.o_bias != nullptr) {
        k.axpy(1.0f, aw.o_bias + r.begin, proj_.data() + t * hidden + r.begin, r.end - r.begin);
      }
      k.axpy(1.0f, proj_.data() + t * hidden + r.begin, h_.data() + t * hidden + r.begin,
             r.end - r.begin);
    }
  });
}

Status CpuForward::dense_mlp(int64_t layer) {
  const int64_t n = n_;
  const LayerWeights& lw = weights_.layer(layer);
  const int64_t hidden = config_.hidden_size;
  norm_rows(lw.post_attention_norm);
  dense_job_.resize(1);
  ExpertJob& job = dense_job_[0];
  job.gate = lw.dense_gate;
  job.up = lw.dense_up;
  job.down = lw.dense_down;
  job.tokens.resize(static_cast<size_t>(n));
  job.weights.assign(static_cast<size_t>(n), 1.0f);
  for (int64_t t = 0; t < n; ++t) job.tokens[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  dense_mlp_.begin(dense_job_, xn_.f32(), n, hidden, h_.data());
  dense_mlp_.finish();
  return Status::ok();
}

Status CpuForward::moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) {
  const int64_t n = n_;
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const LayerWeights& lw = weights_.layer(layer);
  const int64_t hidden = config_.hidden_size;
  norm_rows(lw.post_attention_norm);
  // The router always sees f32 activations: its decisions are discrete, and
  // keeping them identical to the reference matters more than its tiny cost.
  const int64_t n_experts = config_.n_experts;
  const ActivationsView x{xn_.f32(), nullptr};
  const int64_t n_route_chunks = n >= 8 ? chunk_count(n, 4, pool_.size()) : 1;
  pool_.parallel_for(n_route_chunks, [&](int64_t chunk, int) {
    const Range r = split_range(n, chunk, n_route_chunks);
    if (r.begin >= r.end) return;
    ActivationsView rows{x.f32 + r.begin * hidden, nullptr};
    matmul_rows(k, lw.router, rows, r.end - r.begin, router_logits_.data() + r.begin * n_experts,
                n_experts, 0, n_experts);
  });
  if (lw.router_bias != nullptr) {
    for (int64_t t = 0; t < n; ++t) {
      k.axpy(1.0f, lw.router_bias, router_logits_.data() + t * n_experts, n_experts);
    }
  }
  route_tokens(config_, router_logits_.data(), n, lw.router_choice_bias, &routing_);
  if (observer) observer(layer, routing_);
  if (lw.shared_gate.data != nullptr) shared_expert(layer);
  return executor.run_layer(layer, xn_.f32(), n, hidden, routing_, h_.data());
}

// The shared expert belongs to the dense part: computed here, on the
// forward's own pool, before the executor runs the routed ones.
void CpuForward::shared_expert(int64_t layer) {
  const int64_t n = n_;
  const int64_t hidden = config_.hidden_size;
  const LayerWeights& lw = weights_.layer(layer);
  dense_job_.resize(1);
  ExpertJob& job = dense_job_[0];
  job.gate = lw.shared_gate;
  job.up = lw.shared_up;
  job.down = lw.shared_down;
  job.tokens.resize(static_cast<size_t>(n));
  job.weights.assign(static_cast<size_t>(n), 1.0f);
  for (int64_t t = 0; t < n; ++t) job.tokens[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  if (lw.shared_expert_gate.data != nullptr) {
    // sigmoid(shared_expert_gate . x) per token, in f32 (Qwen2-MoE).
    const kernels::CpuKernels& k = kernels::cpu_kernels();
    for (int64_t t = 0; t < n; ++t) {
      float gate = 0.0f;
      kernels::MatmulArgs args{lw.shared_expert_gate, 1, &gate, 1, 0, 1};
      k.matmul_f32(args, xn_.f32() + t * hidden);
      job.weights[static_cast<size_t>(t)] = 1.0f / (1.0f + std::exp(-gate));
    }
  }
  dense_mlp_.begin(dense_job_, xn_.f32(), n, hidden, h_.data());
  dense_mlp_.finish();
}

Status CpuForward::finish(int64_t first_row, int64_t n_rows, float* logits) {
  finish_rows_.resize(static_cast<size_t>(n_rows));
  for (int64_t t = 0; t < n_rows; ++t) finish_rows_[static_cast<size_t>(t)] = first_row + t;
  return finish_rows(finish_rows_, logits);
}

Status CpuForward::finish_rows(std::span<const int64_t> rows, float* logits) {
  const auto n_rows = static_cast<int64_t>(rows.size());
  if (n_rows == 0) return Status::ok();
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const int64_t hidden = config_.hidden_size;
  const int64_t vocab = config_.vocab_size;
  for (int64_t t = 0; t < n_rows; ++t) {
    const int64_t row = rows[static_cast<size_t>(t)];
    if (row < 0 || row >= n_) return invalid_argument("finish_rows: row outside the batch");
    k.rmsnorm(h_.data() + row * hidden, weights_.final_norm(), hidden, config_.rms_norm_eps,
              xn_.row(t));
  }
  xn_.prepare(k, n_rows, {weights_.lm_head().type});
  const ActivationsView x = xn_.view();
  const int64_t n_chunks = chunk_count(vocab, rows_per_chunk(weights_.lm_head()), pool_.size());
  pool_.parallel_for(n_chunks, [&](int64_t chunk, int) {
    const Range r = split_range(vocab, chunk, n_chunks, kernels::kMatmulRowAlign);
    matmul_rows(k, weights_.lm_head(), x, n_rows, logits, vocab, r.begin, r.end);
  });
  return Status::ok();
}

}  // namespace dancemoe::backend
