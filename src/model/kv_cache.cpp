#include "star/model/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace star {

KvCache::KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, KvDType dtype)
    : keys_(n_layers),
      values_(n_layers),
      dtype_(dtype),
      row_elements_(n_kv_heads * head_dim),
      row_bytes_(static_cast<size_t>(kv_bytes(dtype, n_kv_heads * head_dim))) {
  assert(check_kv_dtype(dtype, head_dim).ok());
}

void KvCache::reserve(int64_t tokens) {
  const size_t bytes = static_cast<size_t>(tokens) * row_bytes_;
  for (auto& k : keys_) k.reserve(bytes);
  for (auto& v : values_) v.reserve(bytes);
}

int64_t KvCache::grow(int64_t n) {
  const int64_t first = tokens_;
  tokens_ += n;
  const size_t bytes = static_cast<size_t>(tokens_) * row_bytes_;
  for (auto& k : keys_) k.resize(bytes);
  for (auto& v : values_) v.resize(bytes);
  return first;
}

void KvCache::truncate(int64_t tokens) {
  tokens_ = std::min(tokens_, tokens);
  const size_t bytes = static_cast<size_t>(tokens_) * row_bytes_;
  for (auto& k : keys_) k.resize(bytes);
  for (auto& v : values_) v.resize(bytes);
}

void KvCache::store(int64_t layer, int64_t first, const float* k, const float* v, int64_t n) {
  const size_t offset = static_cast<size_t>(first) * row_bytes_;
  encode_kv(dtype_, k, n * row_elements_, keys_[layer].data() + offset);
  encode_kv(dtype_, v, n * row_elements_, values_[layer].data() + offset);
}

void KvCache::append(const KvCache& from) {
  assert(from.n_layers() == n_layers() && from.row_elements_ == row_elements_ && from.dtype_ == dtype_);
  const int64_t first = grow(from.tokens_);
  const size_t offset = static_cast<size_t>(first) * row_bytes_;
  const size_t bytes = static_cast<size_t>(from.tokens_) * row_bytes_;
  for (int64_t l = 0; l < n_layers(); ++l) {
    std::memcpy(keys_[l].data() + offset, from.keys_[l].data(), bytes);
    std::memcpy(values_[l].data() + offset, from.values_[l].data(), bytes);
  }
}

std::vector<std::byte> KvCache::stored_rows() const {
  std::vector<std::byte> rows(bytes());
  const size_t layer_bytes = static_cast<size_t>(tokens_) * row_bytes_;
  std::byte* out = rows.data();
  for (int64_t l = 0; l < n_layers(); ++l) {
    out = std::copy_n(keys_[l].data(), layer_bytes, out);
    out = std::copy_n(values_[l].data(), layer_bytes, out);
  }
  return rows;
}

void KvCache::append_stored(std::span<const std::byte> rows, int64_t tokens) {
  assert(rows.size() == static_cast<size_t>(tokens) * bytes_per_token());
  const int64_t first = grow(tokens);
  const size_t offset = static_cast<size_t>(first) * row_bytes_;
  const size_t layer_bytes = static_cast<size_t>(tokens) * row_bytes_;
  const std::byte* in = rows.data();
  for (int64_t l = 0; l < n_layers(); ++l) {
    std::copy_n(in, layer_bytes, keys_[l].data() + offset);
    std::copy_n(in + layer_bytes, layer_bytes, values_[l].data() + offset);
    in += 2 * layer_bytes;
  }
}

}  // namespace star
