#include "star/model/kv_cache.h"

#include <algorithm>

namespace star {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim)
    : keys_(n_layers), values_(n_layers), row_floats_(n_kv_heads * head_dim) {}

void KvCache::reserve(int64_t tokens) {
  const size_t floats = static_cast<size_t>(tokens * row_floats_);
  for (auto& k : keys_) k.reserve(floats);
  for (auto& v : values_) v.reserve(floats);
}

int64_t KvCache::grow(int64_t n) {
  const int64_t first = tokens_;
  tokens_ += n;
  const size_t floats = static_cast<size_t>(tokens_ * row_floats_);
  for (auto& k : keys_) k.resize(floats);
  for (auto& v : values_) v.resize(floats);
  return first;
}

void KvCache::truncate(int64_t tokens) {
  tokens_ = std::min(tokens_, tokens);
  const size_t floats = static_cast<size_t>(tokens_ * row_floats_);
  for (auto& k : keys_) k.resize(floats);
  for (auto& v : values_) v.resize(floats);
}

}  // namespace star
