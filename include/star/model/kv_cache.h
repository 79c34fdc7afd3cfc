// KvCache: the keys and values of one sequence (or one rank's shard of it), per layer.
// Layer l holds K and V as [tokens, Hkv, d] rows stored as the cache's KvDType (f32, bf16 or
// q8_0), contiguous, so attention reads any run of rows directly in that type. Rows are encoded
// once, when stored. Size in bytes is exact: tokens × layers × 2 × kv_bytes(dtype, Hkv × d).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "star/model/kv_dtype.h"

namespace star {

class KvCache {
 public:
  KvCache() = default;
  // check_kv_dtype(dtype, head_dim) must hold.
  KvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, KvDType dtype = KvDType::kF32);

  KvDType dtype() const { return dtype_; }
  int64_t tokens() const { return tokens_; }
  int64_t n_layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t row_elements() const { return row_elements_; }  // Hkv × d
  size_t row_bytes() const { return row_bytes_; }          // one token's K (or V) in one layer
  size_t bytes_per_token() const { return 2 * keys_.size() * row_bytes_; }
  size_t bytes() const { return static_cast<size_t>(tokens_) * bytes_per_token(); }

  // Allocates room for `tokens` rows in every layer up front so that appends do not reallocate.
  void reserve(int64_t tokens);
  // Adds n rows (contents unset) to every layer and returns the index of the first new row.
  int64_t grow(int64_t n);
  void truncate(int64_t tokens);

  // Encodes n rows of float32 K and V [n, Hkv, d] into rows [first, first + n) of `layer`.
  void store(int64_t layer, int64_t first, const float* k, const float* v, int64_t n);
  // Appends every row of `from` (same layers, row shape and dtype) as stored: no re-rounding.
  void append(const KvCache& from);
  // Every row as stored, layer by layer, keys then values: bytes() of them, for another rank.
  std::vector<std::byte> stored_rows() const;
  // Appends `tokens` rows laid out as stored_rows lays them (a cache of the same layers, row
  // shape and dtype); `rows` holds tokens × bytes_per_token() bytes.
  void append_stored(std::span<const std::byte> rows, int64_t tokens);

  KvRows keys(int64_t layer) const { return {keys_[layer].data(), dtype_}; }
  KvRows values(int64_t layer) const { return {values_[layer].data(), dtype_}; }

 private:
  std::vector<std::vector<std::byte>> keys_;
  std::vector<std::vector<std::byte>> values_;
  KvDType dtype_ = KvDType::kF32;
  int64_t row_elements_ = 0;
  size_t row_bytes_ = 0;
  int64_t tokens_ = 0;
};

}  // namespace star
