#include "common/inference/prefix_cache.h"

#include <algorithm>

namespace dancemoe {
namespace {

int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

}  // namespace

PrefixCache::PrefixCache(int64_t budget_bytes, int64_t min_tokens, CacheMaker make)
    : budget_bytes_(std::max<int64_t>(budget_bytes, 0)),
      min_tokens_(std::max<int64_t>(min_tokens, 1)),
      make_(std::move(make)) {
  stats_.budget_bytes = budget_bytes_;
}

int64_t PrefixCache::restore(std::span<const int32_t> tokens, int64_t max_tokens, KvCache& into) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (budget_bytes_ == 0) return 0;
  auto best = entries_.end();
  int64_t best_len = 0;
  // No entry can give more than this: the first (most recent) that does
  // ends the search -- under load every entry shares the same system prompt,
  // and scanning all of them was most of a restore.
  const int64_t longest = std::min(static_cast<int64_t>(tokens.size()), max_tokens);
  for (auto it = entries_.begin(); it != entries_.end() && best_len < longest; ++it) {
    const int64_t len = std::min(common_prefix(tokens, it->tokens), max_tokens);
    if (len > best_len) {
      best_len = len;
      best = it;
    }
  }
  if (best == entries_.end() || best_len < min_tokens_ || into.n_past() != 0 ||
      !into.copy_prefix(best->cache, std::min(best_len, into.capacity())).is_ok()) {
    ++stats_.misses;
    return 0;
  }
  entries_.splice(entries_.begin(), entries_, best);
  ++stats_.hits;
  stats_.saved_tokens += static_cast<uint64_t>(into.n_past());
  return into.n_past();
}

std::span<const int32_t> PrefixCache::prepare_locked(std::span<const int32_t> tokens,
                                                     const KvCache& cache) {
  const int64_t n = std::min<int64_t>(cache.n_past(), static_cast<int64_t>(tokens.size()));
  if (n < min_tokens_ || budget_bytes_ == 0) return {};
  const std::span<const int32_t> kept = tokens.first(static_cast<size_t>(n));
  for (auto it = entries_.begin(); it != entries_.end();) {
    const int64_t shared = common_prefix(kept, it->tokens);
    if (shared == static_cast<int64_t>(it->tokens.size()) && shared <= n) {
      // An entry the new one extends (or repeats): the new one replaces it.
      stats_.bytes -= it->bytes;
      it = entries_.erase(it);
    } else if (shared == n) {
      entries_.splice(entries_.begin(), entries_, it);  // already covered
      return {};
    } else {
      ++it;
    }
  }
  return kept;
}

void PrefixCache::push_locked(std::span<const int32_t> kept, KvCache cache) {
  const int64_t bytes = cache.capacity() * cache.bytes_per_position();
  entries_.push_front(
      Entry{std::vector<int32_t>(kept.begin(), kept.end()), std::move(cache), bytes});
  stats_.bytes += bytes;
}

void PrefixCache::insert(std::span<const int32_t> tokens, const KvCache& cache) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::span<const int32_t> kept = prepare_locked(tokens, cache);
  const auto n = static_cast<int64_t>(kept.size());
  const int64_t bytes = n * cache.bytes_per_position();
  if (n == 0 || bytes > budget_bytes_) return;
  evict_until(bytes);
  Result<KvCache> made = make_(n);
  if (!made.is_ok()) return;
  if (!made->copy_prefix(cache, n).is_ok()) return;
  push_locked(kept, std::move(*made));
}

void PrefixCache::insert(std::span<const int32_t> tokens, KvCache&& cache) {
  const int64_t n = std::min<int64_t>(cache.n_past(), static_cast<int64_t>(tokens.size()));
  if (cache.external_storage() != nullptr ||
      static_cast<double>(n) < kAdoptFill * static_cast<double>(cache.capacity()) ||
      cache.capacity() * cache.bytes_per_position() > kAdoptMaxBytes) {
    insert(tokens, static_cast<const KvCache&>(cache));
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const std::span<const int32_t> kept = prepare_locked(tokens, cache);
  const int64_t bytes = cache.capacity() * cache.bytes_per_position();
  if (kept.empty() || bytes > budget_bytes_) return;
  evict_until(bytes);
  cache.set_n_past(static_cast<int64_t>(kept.size()));
  push_locked(kept, std::move(cache));
}

void PrefixCache::evict_until(int64_t room) {
  while (!entries_.empty() && stats_.bytes + room > budget_bytes_) {
    stats_.bytes -= entries_.back().bytes;
    entries_.pop_back();
    ++stats_.evictions;
  }
}

void PrefixCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
  stats_.bytes = 0;
}

PrefixCache::Stats PrefixCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.entries = entries_.size();
  return s;
}

}  // namespace dancemoe
