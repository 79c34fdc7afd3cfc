#include "star/attention/layer_attentions.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "star/attention/merge.h"
#include "star/backend/cpu/attention.h"
#include "star/common/cpu_clock.h"
#include "star/dist/ring_pass.h"

namespace star {
namespace {

// out [n, Hq, d], lse [n, Hq] of q against rows [first, first + rows) of one cache layer.
void attend_rows(const AttentionShape& s, const float* q, int64_t n, KvRows keys, KvRows values, int64_t first,
                 int64_t rows, const AttentionMask& mask, float* out, float* lse, const SkipSoftmax& skip) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  cpu::attention_forward(q, n, keys.at(first * s.kv_floats()), values.at(first * s.kv_floats()), rows, s.n_heads,
                         s.n_kv_heads, s.head_dim, scale, mask, out, lse, skip);
}

AttentionMask causal_from(int64_t offset, AttentionWindow window = {}) {
  AttentionMask m;
  m.causal = true;
  m.causal_offset = offset;
  m.window = window;
  return m;
}

}  // namespace

LocalCausalAttention::LocalCausalAttention(AttentionShape shape, KvCache& cache, AttentionWindow window)
    : shape_(shape), cache_(cache), window_(window) {}

Status LocalCausalAttention::begin(int64_t n_new) {
  first_ = cache_.grow(n_new);
  lse_.resize(n_new * shape_.n_heads);
  return ok_status();
}

Status LocalCausalAttention::attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                                    float* out) {
  cache_.store(layer, first_, k, v, n);
  attend_rows(shape_, q, n, cache_.keys(layer), cache_.values(layer), 0, first_ + n, causal_from(first_, window_),
              out, lse_.data(), skip_softmax());
  return ok_status();
}

PrefixedBlockAttention::PrefixedBlockAttention(AttentionShape shape, const KvCache& prefix, KvCache& shard,
                                               AttentionWindow window)
    : shape_(shape), prefix_(prefix), shard_(shard), window_(window) {}

Status PrefixedBlockAttention::begin(int64_t n_new) {
  first_ = shard_.grow(n_new);
  partial_out_.resize(2 * n_new * shape_.q_floats());
  partial_lse_.resize(2 * n_new * shape_.n_heads);
  lse_.resize(n_new * shape_.n_heads);
  return ok_status();
}

Status PrefixedBlockAttention::attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                                      float* out) {
  shard_.store(layer, first_, k, v, n);
  const int64_t np = prefix_.tokens();
  if (np == 0) {
    attend_rows(shape_, q, n, shard_.keys(layer), shard_.values(layer), first_, n, causal_from(0, window_), out,
                lse_.data(), skip_softmax());
    return ok_status();
  }
  float* out_prefix = partial_out_.data();
  float* out_block = partial_out_.data() + n * shape_.q_floats();
  float* lse_prefix = partial_lse_.data();
  float* lse_block = partial_lse_.data() + n * shape_.n_heads;
  attend_rows(shape_, q, n, prefix_.keys(layer), prefix_.values(layer), 0, np, AttentionMask{}, out_prefix,
              lse_prefix, skip_softmax());
  attend_rows(shape_, q, n, shard_.keys(layer), shard_.values(layer), first_, n, causal_from(0), out_block,
              lse_block, skip_softmax());
  merge_partials(partial_out_.data(), partial_lse_.data(), 2, n, shape_.n_heads, shape_.head_dim, out, lse_.data());
  return ok_status();
}

RingSegmentAttention::RingSegmentAttention(AttentionShape shape, Communicator& comm, KvCache& shard,
                                           std::vector<int64_t> segment_tokens)
    : shape_(shape), comm_(comm), shard_(shard), segment_tokens_(std::move(segment_tokens)) {}

Status RingSegmentAttention::begin(int64_t n_new) {
  if (static_cast<int>(segment_tokens_.size()) != comm_.size() || segment_tokens_[comm_.rank()] != n_new) {
    return internal_error("ring: segment of " + std::to_string(n_new) + " tokens does not match the plan");
  }
  first_ = shard_.grow(n_new);
  return ok_status();
}

Status RingSegmentAttention::attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                                    float* out) {
  shard_.store(layer, first_, k, v, n);
  const int64_t kvf = shape_.kv_floats(), qf = shape_.q_floats(), H = shape_.n_heads;
  const int me = comm_.rank();
  int64_t earlier = 0;
  for (int r = 0; r < me; ++r) earlier += segment_tokens_[r] > 0 ? 1 : 0;
  const int64_t n_partials = 1 + earlier;
  partial_out_.resize(n_partials * n * qf);
  partial_lse_.resize(n_partials * n * H);
  lse_.resize(n * H);

  attend_rows(shape_, q, n, shard_.keys(layer), shard_.values(layer), first_, n, causal_from(0), partial_out_.data(),
              partial_lse_.data(), skip_softmax());

  // K then V of this layer's segment travel together around the ring, rounded as the shard stores
  // them, so every rank attends to the values a dense run would read from its cache.
  packed_.resize(2 * n * kvf);
  std::memcpy(packed_.data(), k, n * kvf * sizeof(float));
  std::memcpy(packed_.data() + n * kvf, v, n * kvf * sizeof(float));
  round_kv(shard_.dtype(), packed_.data(), 2 * n * kvf);
  std::vector<int64_t> floats_per_rank(segment_tokens_.size());
  for (size_t r = 0; r < segment_tokens_.size(); ++r) floats_per_rank[r] = 2 * segment_tokens_[r] * kvf;

  int64_t next = 1;
  double attending = 0;
  const double pass_start = process_cpu_seconds();
  Status s = ring_pass(comm_, packed_, floats_per_rank, [&](int source, std::span<const float> kv) -> Status {
    const int64_t rows = segment_tokens_[source];
    if (source > me || rows == 0) return ok_status();  // later segments are causally invisible
    const double t0 = process_cpu_seconds();
    attend_rows(shape_, q, n, KvRows::f32(kv.data()), KvRows::f32(kv.data() + rows * kvf), 0, rows, AttentionMask{},
                partial_out_.data() + next * n * qf, partial_lse_.data() + next * n * H, skip_softmax());
    attending += process_cpu_seconds() - t0;
    ++next;
    return ok_status();
  });
  communication_cpu_seconds_ += process_cpu_seconds() - pass_start - attending;
  if (!s.ok()) return s;
  merge_partials(partial_out_.data(), partial_lse_.data(), n_partials, n, H, shape_.head_dim, out, lse_.data());
  return ok_status();
}

ShardedQueryAttention::ShardedQueryAttention(AttentionShape shape, Communicator& comm, KvCache& shard,
                                             bool is_query_host, AttentionWindow window)
    : shape_(shape), comm_(comm), shard_(shard), is_query_host_(is_query_host), window_(window) {}

Status ShardedQueryAttention::begin(int64_t n_new) {
  first_ = is_query_host_ ? shard_.grow(n_new) : shard_.tokens();
  const int64_t per_rank = n_new * shape_.n_heads * (shape_.head_dim + 1);
  local_.resize(per_rank);
  gathered_.resize(per_rank * comm_.size());
  partial_out_.resize(comm_.size() * n_new * shape_.q_floats());
  partial_lse_.resize(comm_.size() * n_new * shape_.n_heads);
  lse_.resize(n_new * shape_.n_heads);
  return ok_status();
}

Status ShardedQueryAttention::attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                                     float* out) {
  const int64_t qf = shape_.q_floats(), H = shape_.n_heads;
  // Local partial, packed as [out n·Hq·d | lse n·Hq] so one all-gather carries both.
  float* local_out = local_.data();
  float* local_lse = local_.data() + n * qf;
  if (is_query_host_) {
    shard_.store(layer, first_, k, v, n);
    attend_rows(shape_, q, n, shard_.keys(layer), shard_.values(layer), 0, first_ + n, causal_from(first_, window_),
                local_out, local_lse, skip_softmax());
  } else {
    // A remote shard lies wholly before every query token: no mask (the reference code's
    // bottom-right causal mask here would hide the shard's last tokens from early query tokens).
    attend_rows(shape_, q, n, shard_.keys(layer), shard_.values(layer), 0, shard_.tokens(), AttentionMask{},
                local_out, local_lse, skip_softmax());
  }
  const int P = comm_.size();
  if (P == 1) {
    std::memcpy(out, local_out, n * qf * sizeof(float));
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

}  // namespace star
