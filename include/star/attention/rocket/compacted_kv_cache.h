// CompactedKvCache: one rank's KV after RocketKV's stage 1. Each (layer, KV head) keeps its own
// token set, so each has its own rows: K and V of head_dim elements in the shard's KvDType, in
// compacted order (RoPE is baked into K, so a row needs no position), with the KT pages over its
// keys. Tokens appended afterwards (the query host's query and answer) go to every head.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "star/attention/rocket/kt_pages.h"
#include "star/model/kv_cache.h"
#include "star/model/kv_dtype.h"

namespace star::rocket {

class CompactedKvCache {
 public:
  CompactedKvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, KvDType dtype, int64_t page_size);

  int64_t n_layers() const { return n_layers_; }
  int64_t n_kv_heads() const { return n_kv_heads_; }
  KvDType dtype() const { return dtype_; }
  // Rows of one head: those stage 1 kept, then every appended token.
  int64_t kept(int64_t layer, int64_t kv) const { return head(layer, kv).kept; }
  int64_t rows(int64_t layer, int64_t kv) const { return head(layer, kv).kept + appended_; }
  int64_t appended() const { return appended_; }
  // The most rows stage 1 kept in any head, plus the appended tokens: truncate(tokens()) is a no-op.
  int64_t tokens() const { return max_kept_ + appended_; }
  // Exact bytes held: K and V rows and the KT pages.
  size_t bytes() const;

  // Copies rows keep[kv] (ascending token indices) of `layer` of `from` into head kv, after
  // whatever it kept before. Only before any token is appended.
  void keep_rows(int64_t layer, const KvCache& from, const std::vector<std::vector<int64_t>>& keep);

  // Adds n rows (contents unset) to every head of every layer.
  void grow(int64_t n);
  // Stores k and v [n, Hkv, d] as the n newest rows of each head of `layer` and widens its KT pages.
  void store(int64_t layer, const float* k, const float* v, int64_t n);
  // Back to `tokens` (see tokens()): drops appended rows, never kept ones.
  void truncate(int64_t tokens);

  KvRows keys(int64_t layer, int64_t kv) const { return {head(layer, kv).k.data(), dtype_}; }
  KvRows values(int64_t layer, int64_t kv) const { return {head(layer, kv).v.data(), dtype_}; }
  const KtPages& pages(int64_t layer, int64_t kv) const { return head(layer, kv).kt; }
  size_t row_bytes() const { return row_bytes_; }  // one head's K (or V) row

 private:
  struct Head {
    std::vector<std::byte> k, v;
    int64_t kept = 0;
    KtPages kt;
  };
  Head& head(int64_t layer, int64_t kv) { return heads_[layer * n_kv_heads_ + kv]; }
  const Head& head(int64_t layer, int64_t kv) const { return heads_[layer * n_kv_heads_ + kv]; }
  // Appends the keys of rows [kt.tokens(), rows) to the head's KT pages, as stored.
  void extend_pages(Head& h, int64_t rows);

  int64_t n_layers_, n_kv_heads_, head_dim_;
  KvDType dtype_;
  size_t row_bytes_;
  int64_t max_kept_ = 0;
  int64_t appended_ = 0;
  std::vector<Head> heads_;  // [layer * Hkv + kv]
  std::vector<float> key_;   // one decoded key row
};

}  // namespace star::rocket
