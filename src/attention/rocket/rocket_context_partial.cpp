#include "star/attention/rocket/rocket_context_partial.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "star/attention/rocket/stage2.h"
#include "star/backend/cpu/attention.h"

namespace star::rocket {

const std::vector<int64_t>& RocketContextPartial::decode_rows(int64_t layer, int64_t kv, const float* q,
                                                              int64_t own_first) {
  const int64_t rows = cache_.rows(layer, kv), page = config_.page_size;
  const int64_t G = shape_.n_heads / shape_.n_kv_heads;
  // The window before the step's token reaches back through own_first own tokens into the context.
  const int64_t recent = own_first >= 0 ? std::max<int64_t>(0, rows - std::max<int64_t>(0, config_.window_size - own_first))
                                        : rows;
  selected_.clear();
  for (int64_t p : select_pages(q, G, cache_.pages(layer, kv), config_.topr, config_.topk)) {
    for (int64_t r = p * page; r < std::min(recent, (p + 1) * page); ++r) selected_.push_back(r);
  }
  for (int64_t r = recent; r < rows; ++r) selected_.push_back(r);
  if (static_cast<int64_t>(selected_.size()) == rows) selected_.clear();
  return selected_;
}

Status RocketContextPartial::attend(int64_t layer, const float* q, int64_t n, int64_t own_first, float* out,
                                    float* lse, const SkipSoftmax&, cpu::AttentionPrimitives::Context) {
  const int64_t H = shape_.n_heads, d = shape_.head_dim, G = H / shape_.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  q_group_.resize(n * G * d);
  out_group_.resize(n * G * d);
  lse_group_.resize(n * G);
  for (int64_t kv = 0; kv < shape_.n_kv_heads; ++kv) {
    for (int64_t t = 0; t < n; ++t) {
      std::memcpy(q_group_.data() + t * G * d, q + (t * H + kv * G) * d, G * d * sizeof(float));
    }
    KvRows keys = cache_.keys(layer, kv), values = cache_.values(layer, kv);
    int64_t attended = cache_.rows(layer, kv);
    if (n == 1 && !decode_rows(layer, kv, q_group_.data(), own_first).empty()) {
      const size_t row_bytes = cache_.row_bytes();
      k_selected_.resize(selected_.size() * row_bytes);
      v_selected_.resize(selected_.size() * row_bytes);
      for (size_t i = 0; i < selected_.size(); ++i) {
        std::memcpy(k_selected_.data() + i * row_bytes, keys.data + selected_[i] * row_bytes, row_bytes);
        std::memcpy(v_selected_.data() + i * row_bytes, values.data + selected_[i] * row_bytes, row_bytes);
      }
      keys = {k_selected_.data(), cache_.dtype()};
      values = {v_selected_.data(), cache_.dtype()};
      attended = static_cast<int64_t>(selected_.size());
    }
    // The context lies wholly before every row: no mask. Skip Softmax does not combine with the
    // page selection (RocketQueryAttention runs dense too).
    cpu::attention_forward(q_group_.data(), n, keys, values, attended, G, 1, d, scale, AttentionMask{},
                           out_group_.data(), lse_group_.data());
    for (int64_t t = 0; t < n; ++t) {
      std::memcpy(out + (t * H + kv * G) * d, out_group_.data() + t * G * d, G * d * sizeof(float));
      std::memcpy(lse + t * H + kv * G, lse_group_.data() + t * G, G * sizeof(float));
    }
  }
  return ok_status();
}

}  // namespace star::rocket
