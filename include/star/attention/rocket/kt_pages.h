// KtPages: RocketKV's "KT cache" for one KV head: over pages of `page_size` consecutive retained
// tokens (compacted order), the elementwise minimum and maximum of their keys. Appending a key
// widens the last page or starts a new one, so decoding keeps it current at O(d) a token. Kept in
// float32 (TensorRT-LLM offers bfloat16 or float8_e5m2; the pages are a small fraction of the KV).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace star::rocket {

class KtPages {
 public:
  KtPages() = default;
  KtPages(int64_t head_dim, int64_t page_size);

  int64_t head_dim() const { return head_dim_; }
  int64_t page_size() const { return page_size_; }
  int64_t tokens() const { return tokens_; }
  int64_t pages() const { return (tokens_ + page_size_ - 1) / page_size_; }
  size_t bytes() const { return (kmin_.size() + kmax_.size()) * sizeof(float); }

  // Adds the key [d] of the next retained token.
  void append(const float* key);
  // Drops the pages past the one holding token `tokens` - 1 and that page too when it is partial:
  // afterwards tokens() is `tokens` rounded down to a page, and the caller re-appends the rest.
  void truncate_to_page(int64_t tokens);

  const float* kmin(int64_t page) const { return kmin_.data() + page * head_dim_; }
  const float* kmax(int64_t page) const { return kmax_.data() + page * head_dim_; }

 private:
  int64_t head_dim_ = 0;
  int64_t page_size_ = 1;
  int64_t tokens_ = 0;
  std::vector<float> kmin_, kmax_;  // [pages, d]
};

}  // namespace star::rocket
