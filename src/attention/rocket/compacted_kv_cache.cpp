#include "star/attention/rocket/compacted_kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace star::rocket {

CompactedKvCache::CompactedKvCache(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, KvDType dtype,
                                   int64_t page_size)
    : n_layers_(n_layers),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      dtype_(dtype),
      row_bytes_(static_cast<size_t>(kv_bytes(dtype, head_dim))),
      heads_(n_layers * n_kv_heads),
      key_(head_dim) {
  for (Head& h : heads_) h.kt = KtPages(head_dim, page_size);
}

size_t CompactedKvCache::bytes() const {
  size_t total = 0;
  for (const Head& h : heads_) total += h.k.size() + h.v.size() + h.kt.bytes();
  return total;
}

void CompactedKvCache::extend_pages(Head& h, int64_t rows) {
  for (int64_t r = h.kt.tokens(); r < rows; ++r) {
    decode_kv(dtype_, h.k.data() + r * row_bytes_, head_dim_, key_.data());
    h.kt.append(key_.data());
  }
}

void CompactedKvCache::keep_rows(int64_t layer, const KvCache& from, const std::vector<std::vector<int64_t>>& keep) {
  assert(appended_ == 0 && from.dtype() == dtype_ && static_cast<int64_t>(keep.size()) == n_kv_heads_);
  const KvRows keys = from.keys(layer), values = from.values(layer);
  for (int64_t kv = 0; kv < n_kv_heads_; ++kv) {
    Head& h = head(layer, kv);
    const size_t first = h.k.size();
    h.k.resize(first + keep[kv].size() * row_bytes_);
    h.v.resize(first + keep[kv].size() * row_bytes_);
    for (size_t i = 0; i < keep[kv].size(); ++i) {
      const int64_t element = (keep[kv][i] * n_kv_heads_ + kv) * head_dim_;
      std::memcpy(h.k.data() + first + i * row_bytes_, keys.at(element).data, row_bytes_);
      std::memcpy(h.v.data() + first + i * row_bytes_, values.at(element).data, row_bytes_);
    }
    h.kept += static_cast<int64_t>(keep[kv].size());
    max_kept_ = std::max(max_kept_, h.kept);
    extend_pages(h, h.kept);
  }
}

void CompactedKvCache::grow(int64_t n) {
  appended_ += n;
  for (Head& h : heads_) {
    h.k.resize((h.kept + appended_) * row_bytes_);
    h.v.resize((h.kept + appended_) * row_bytes_);
  }
}

void CompactedKvCache::store(int64_t layer, const float* k, const float* v, int64_t n) {
  for (int64_t kv = 0; kv < n_kv_heads_; ++kv) {
    Head& h = head(layer, kv);
    const int64_t first = h.kept + appended_ - n;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t element = (t * n_kv_heads_ + kv) * head_dim_;
      encode_kv(dtype_, k + element, head_dim_, h.k.data() + (first + t) * row_bytes_);
      encode_kv(dtype_, v + element, head_dim_, h.v.data() + (first + t) * row_bytes_);
    }
    extend_pages(h, first + n);
  }
}

void CompactedKvCache::truncate(int64_t tokens) {
  appended_ = std::clamp<int64_t>(tokens - max_kept_, 0, appended_);
  for (Head& h : heads_) {
    const int64_t rows = h.kept + appended_;
    h.k.resize(rows * row_bytes_);
    h.v.resize(rows * row_bytes_);
    h.kt.truncate_to_page(rows);
    extend_pages(h, rows);
  }
}

}  // namespace star::rocket
