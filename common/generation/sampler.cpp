#include "common/generation/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/kernels.h"

namespace dancemoe {
namespace {

bool in_range(float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; }

}  // namespace

Status SamplingParams::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return invalid_argument("temperature must be a finite number >= 0, got " +
                            std::to_string(temperature));
  }
  if (top_k < 0) return invalid_argument("top_k must be >= 0, got " + std::to_string(top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return invalid_argument("top_p must be in (0, 1], got " + std::to_string(top_p));
  }
  if (!in_range(min_p, 0.0f, 1.0f)) {
    return invalid_argument("min_p must be in [0, 1], got " + std::to_string(min_p));
  }
  if (!in_range(presence_penalty, -2.0f, 2.0f)) {
    return invalid_argument("presence_penalty must be in [-2, 2], got " +
                            std::to_string(presence_penalty));
  }
  if (!in_range(frequency_penalty, -2.0f, 2.0f)) {
    return invalid_argument("frequency_penalty must be in [-2, 2], got " +
                            std::to_string(frequency_penalty));
  }
  if (!(repetition_penalty > 0.0f && repetition_penalty <= 10.0f)) {
    return invalid_argument("repetition_penalty must be in (0, 10], got " +
                            std::to_string(repetition_penalty));
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return invalid_argument("logit_bias: token id " + std::to_string(id) + " < 0");
    if (!in_range(bias, -100.0f, 100.0f)) {
      return invalid_argument("logit_bias: the bias of token " + std::to_string(id) +
                              " must be in [-100, 100], got " + std::to_string(bias));
    }
  }
  return Status::ok();
}

bool SamplingParams::adjusts() const {
  return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f ||
         !logit_bias.empty();
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

void Sampler::set_prompt(std::span<const int32_t> prompt) {
  if (params_.repetition_penalty == 1.0f) return;
  prompt_.assign(prompt.begin(), prompt.end());
  std::sort(prompt_.begin(), prompt_.end());
  prompt_.erase(std::unique(prompt_.begin(), prompt_.end()), prompt_.end());
}

void Sampler::accept(int32_t id) {
  if (params_.adjusts()) ++counts_[id];
}

void Sampler::adjust(std::span<float> logits) const {
  const auto n = static_cast<int32_t>(logits.size());
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id < n) logits[static_cast<size_t>(id)] += bias;
  }
  const float rp = params_.repetition_penalty;
  auto repeat = [&](int32_t id) {
    if (id < 0 || id >= n) return;
    float& l = logits[static_cast<size_t>(id)];
    l = l > 0.0f ? l / rp : l * rp;
  };
  if (rp != 1.0f) {
    for (int32_t id : prompt_) repeat(id);
    for (const auto& [id, count] : counts_) {
      if (!std::binary_search(prompt_.begin(), prompt_.end(), id)) repeat(id);
    }
  }
  for (const auto& [id, count] : counts_) {
    if (id < 0 || id >= n) continue;
    logits[static_cast<size_t>(id)] -=
        params_.frequency_penalty * static_cast<float>(count) + params_.presence_penalty;
  }
}

namespace {

bool by_logit(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first != b.first ? a.first > b.first : a.second < b.second;
}

}  // namespace

// Sorts candidates_ far enough that its first `n` are the n most likely in
// order: top_p rarely needs far down a 150k vocabulary, and a full sort per
// token was a tenth of a batched decode step, on the scheduler's one thread.
void Sampler::sort_first(size_t n) {
  n = std::min(n, candidates_.size());
  if (n <= sorted_) return;
  std::partial_sort(candidates_.begin() + static_cast<long>(sorted_),
                    candidates_.begin() + static_cast<long>(n), candidates_.end(), by_logit);
  sorted_ = n;
}

int32_t Sampler::sample(std::span<const float> logits) {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (params_.temperature == 0.0f) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  // Every token's probability softmax(logit / temperature) at once, by the
  // CPU kernels' vectorised softmax: one std::exp per token was most of a
  // served decode step's sampling (25 us per sequence at a 4096 vocabulary,
  // on the scheduler's one thread while the pool waited). NaN logits count
  // as masked. The most likely is the first of the largest logits.
  const float inv_temperature = 1.0f / params_.temperature;
  probs_.resize(static_cast<size_t>(n));
  int32_t top = -1;
  float top_logit = -INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    const float l = logits[static_cast<size_t>(i)];
    probs_[static_cast<size_t>(i)] = std::isnan(l) ? -INFINITY : l * inv_temperature;
    if (l > top_logit) {
      top_logit = l;
      top = i;
    }
  }
  if (top < 0) return 0;  // everything masked (the caller checked this)
  kernels::cpu_kernels().softmax(probs_.data(), n);
  const bool cuts =
      (params_.top_k > 0 && params_.top_k < n) || params_.min_p > 0.0f || params_.top_p < 1.0f;
  if (!cuts) return draw_all(logits, top);

  // The cuts need the candidates in order of likelihood: the unmasked tokens
  // with their logits, sorted only as far as a cut needs.
  candidates_.resize(static_cast<size_t>(n));
  sorted_ = 0;
  size_t n_kept = 0;
  for (int32_t i = 0; i < n; ++i) {
    const float l = logits[static_cast<size_t>(i)];
    candidates_[n_kept] = {l, i};
    n_kept += l != -INFINITY && !std::isnan(l) ? 1 : 0;
  }
  candidates_.resize(n_kept);
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < candidates_.size()) {
    sort_first(static_cast<size_t>(params_.top_k));
    candidates_.resize(static_cast<size_t>(params_.top_k));
  }
  // From here on each candidate carries its weight relative to the most
  // likely, exp((logit - max) / temperature), instead of its logit. The
  // weight grows with the logit, so by_logit's order and the sorted prefix
  // stay as they were.
  const float inv_top = 1.0f / probs_[static_cast<size_t>(top)];
  for (auto& c : candidates_) c.first = probs_[static_cast<size_t>(c.second)] * inv_top;
  // min_p keeps the most likely and the others whose weight is >= min_p.
  if (params_.min_p > 0.0f) {
    const float min_p = params_.min_p;
    if (sorted_ > 0) {  // all sorted (top_k): a prefix
      size_t cut = 1;
      while (cut < candidates_.size() && candidates_[cut].first >= min_p) ++cut;
      candidates_.resize(cut);
      sorted_ = cut;
    } else {
      candidates_.erase(
          std::remove_if(candidates_.begin(), candidates_.end(),
                         [&](const auto& c) { return c.second != top && c.first < min_p; }),
          candidates_.end());
    }
  }
  double total = 0.0;
  for (const auto& c : candidates_) total += c.first;
  // top_p walks the candidates from the most likely, sorting more as it goes.
  size_t chunk = 64;
  auto ensure = [&](size_t i) {
    if (i < sorted_) return;
    sort_first(std::max(i + 1, sorted_ + chunk));
    chunk *= 2;
  };
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    size_t cut = candidates_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      ensure(i);
      cumulative += candidates_[i].first / total;
      if (cumulative >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    candidates_.resize(cut);
    sorted_ = std::min(sorted_, cut);
    total = 0.0;
    for (const auto& c : candidates_) total += c.first;
  }
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  // In the candidates' order: sorted where top_k or top_p needed it, else
  // by token id (the draw's distribution does not depend on the order, and
  // a nearly flat distribution would walk and sort most of the vocabulary).
  for (const auto& [weight, id] : candidates_) {
    r -= weight;
    if (r <= 0.0) return id;
  }
  return candidates_.back().second;
}

// Draws from every token by its probability in probs_, in token order (as
// the candidates' walk does without a cut): the walk skips whole blocks of
// 16 by their sums, so a 150k vocabulary costs a few thousand additions.
int32_t Sampler::draw_all(std::span<const float> logits, int32_t top) {
  constexpr size_t kBlock = 16;
  const size_t n = probs_.size();
  const size_t n_blocks = (n + kBlock - 1) / kBlock;
  block_sums_.resize(n_blocks);
  // A local sum per block: adding into block_sums_[i / 16] in place made
  // every addition wait for the previous one's store (half the draw's time).
  for (size_t b = 0; b < n_blocks; ++b) {
    float sum = 0.0f;
    for (size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) sum += probs_[i];
    block_sums_[b] = sum;
  }
  double total = 0.0;
  for (float b : block_sums_) total += b;
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  size_t b = 0;
  while (b + 1 < n_blocks && r - block_sums_[b] > 0.0) r -= block_sums_[b++];
  int32_t last = top;  // the last drawable token seen: rounding may leave r > 0 at the end
  for (size_t i = b * kBlock; i < n; ++i) {
    const float p = probs_[i];
    // Masked (whatever the exp's rounding gave them), or too unlikely to be
    // represented.
    if (!(p > 0.0f) || !(logits[i] > -INFINITY)) continue;
    last = static_cast<int32_t>(i);
    r -= p;
    if (r <= 0.0) return last;
  }
  return last;
}

}  // namespace dancemoe
