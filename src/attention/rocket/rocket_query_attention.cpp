#include "star/attention/rocket/rocket_query_attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "star/attention/merge.h"
#include "star/attention/rocket/stage2.h"
#include "star/backend/cpu/attention.h"

namespace star::rocket {

RocketQueryAttention::RocketQueryAttention(AttentionShape shape, Communicator& comm, CompactedKvCache& cache,
                                           bool is_query_host, const RocketConfig& config)
    : shape_(shape), comm_(comm), cache_(cache), is_query_host_(is_query_host), config_(config) {}

Status RocketQueryAttention::begin(int64_t n_new) {
  if (is_query_host_) cache_.grow(n_new);
  const int64_t G = shape_.n_heads / shape_.n_kv_heads;
  const int64_t per_rank = n_new * shape_.n_heads * (shape_.head_dim + 1);
  q_group_.resize(n_new * G * shape_.head_dim);
  out_group_.resize(n_new * G * shape_.head_dim);
  lse_group_.resize(n_new * G);
  local_.resize(per_rank);
  gathered_.resize(per_rank * comm_.size());
  partial_out_.resize(comm_.size() * n_new * shape_.q_floats());
  partial_lse_.resize(comm_.size() * n_new * shape_.n_heads);
  lse_.resize(n_new * shape_.n_heads);
  return ok_status();
}

const std::vector<int64_t>& RocketQueryAttention::decode_rows(int64_t layer, int64_t kv, const float* q) {
  const int64_t rows = cache_.rows(layer, kv), page = config_.page_size;
  const int64_t G = shape_.n_heads / shape_.n_kv_heads;
  // The step's own token and the window before it, on the query host.
  const int64_t recent = is_query_host_ ? std::max<int64_t>(0, rows - 1 - config_.window_size) : rows;
  selected_.clear();
  for (int64_t p : select_pages(q, G, cache_.pages(layer, kv), config_.topr, config_.topk)) {
    for (int64_t r = p * page; r < std::min(recent, (p + 1) * page); ++r) selected_.push_back(r);
  }
  for (int64_t r = recent; r < rows; ++r) selected_.push_back(r);
  if (static_cast<int64_t>(selected_.size()) == rows) selected_.clear();
  return selected_;
}

Status RocketQueryAttention::attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                                    float* out) {
  const int64_t H = shape_.n_heads, d = shape_.head_dim, G = H / shape_.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  if (is_query_host_) cache_.store(layer, k, v, n);
  float* local_out = local_.data();
  float* local_lse = local_.data() + n * shape_.q_floats();
  for (int64_t kv = 0; kv < shape_.n_kv_heads; ++kv) {
    for (int64_t t = 0; t < n; ++t) {
      std::memcpy(q_group_.data() + t * G * d, q + (t * H + kv * G) * d, G * d * sizeof(float));
    }
    const int64_t rows = cache_.rows(layer, kv);
    KvRows keys = cache_.keys(layer, kv), values = cache_.values(layer, kv);
    int64_t attended = rows;
    if (n == 1 && !decode_rows(layer, kv, q_group_.data()).empty()) {
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
    // The new tokens are the last rows of the query host's selection; a remote shard lies wholly
    // before every query token, so it needs no mask.
    AttentionMask mask;
    mask.causal = is_query_host_;
    mask.causal_offset = attended - n;
    cpu::attention_forward(q_group_.data(), n, keys, values, attended, G, 1, d, scale, mask, out_group_.data(),
                           lse_group_.data());
    for (int64_t t = 0; t < n; ++t) {
      std::memcpy(local_out + (t * H + kv * G) * d, out_group_.data() + t * G * d, G * d * sizeof(float));
      std::memcpy(local_lse + t * H + kv * G, lse_group_.data() + t * G, G * sizeof(float));
    }
    rows_attended_ += attended;
    rows_held_ += rows;
  }
  return gather_and_merge(n, out);
}

Status RocketQueryAttention::gather_and_merge(int64_t n, float* out) {
  const int64_t qf = shape_.q_floats(), H = shape_.n_heads;
  const int P = comm_.size();
  if (P == 1) {
    std::memcpy(out, local_.data(), n * qf * sizeof(float));
    return ok_status();
  }
  const int64_t per_rank = n * H * (shape_.head_dim + 1);
  const auto start = std::chrono::steady_clock::now();
  if (Status s = comm_.all_gather(local_.data(), per_rank * sizeof(float), gathered_.data()); !s.ok()) return s;
  floats_sent_ += per_rank;
  for (int p = 0; p < P; ++p) {
    const float* src = gathered_.data() + p * per_rank;
    std::memcpy(partial_out_.data() + p * n * qf, src, n * qf * sizeof(float));
    std::memcpy(partial_lse_.data() + p * n * H, src + n * qf, n * H * sizeof(float));
  }
  merge_partials(partial_out_.data(), partial_lse_.data(), P, n, H, shape_.head_dim, out, lse_.data());
  gather_merge_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ok_status();
}

}  // namespace star::rocket
