// KvCache: the keys and values of one sequence (or one rank's shard of it), per layer.
// Layer l holds K and V as [tokens, Hkv, d] float32 rows, contiguous, so attention reads any run
// of rows directly. Size in bytes is exact: tokens × layers × 2 × Hkv × d × 4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace star {

class KvCache {
 public:
  KvCache() = default;
  KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim);

  int64_t tokens() const { return tokens_; }
  int64_t n_layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t row_floats() const { return row_floats_; }  // Hkv × d
  size_t bytes_per_token() const { return 2 * keys_.size() * row_floats_ * sizeof(float); }
  size_t bytes() const { return static_cast<size_t>(tokens_) * bytes_per_token(); }

  // Allocates room for `tokens` rows in every layer up front so that appends do not reallocate.
  void reserve(int64_t tokens);
  // Adds n rows (contents unset) to every layer and returns the index of the first new row.
  int64_t grow(int64_t n);
  void truncate(int64_t tokens);

  float* keys(int64_t layer) { return keys_[layer].data(); }
  float* values(int64_t layer) { return values_[layer].data(); }
  const float* keys(int64_t layer) const { return keys_[layer].data(); }
  const float* values(int64_t layer) const { return values_[layer].data(); }

 private:
  std::vector<std::vector<float>> keys_;
  std::vector<std::vector<float>> values_;
  int64_t row_floats_ = 0;
  int64_t tokens_ = 0;
};

}  // namespace star
