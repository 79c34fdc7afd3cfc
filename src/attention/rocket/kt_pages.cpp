#include "star/attention/rocket/kt_pages.h"

#include <algorithm>

namespace star::rocket {

KtPages::KtPages(int64_t head_dim, int64_t page_size) : head_dim_(head_dim), page_size_(page_size) {}

void KtPages::append(const float* key) {
  if (tokens_ % page_size_ == 0) {
    kmin_.insert(kmin_.end(), key, key + head_dim_);
    kmax_.insert(kmax_.end(), key, key + head_dim_);
  } else {
    float* lo = kmin_.data() + (pages() - 1) * head_dim_;
    float* hi = kmax_.data() + (pages() - 1) * head_dim_;
    for (int64_t c = 0; c < head_dim_; ++c) {
      lo[c] = std::min(lo[c], key[c]);
      hi[c] = std::max(hi[c], key[c]);
    }
  }
  ++tokens_;
}

void KtPages::truncate_to_page(int64_t tokens) {
  tokens_ = std::min(tokens_, tokens / page_size_ * page_size_);
  kmin_.resize(pages() * head_dim_);
  kmax_.resize(pages() * head_dim_);
}

}  // namespace star::rocket
