#include "star/attention/layer_attentions.h"

#include <cmath>
#include <cstring>
#include <string>

#include "star/attention/merge.h"
#include "star/backend/cpu/attention.h"
#include "star/common/cpu_clock.h"
#include "star/dist/ring_pass.h"

namespace star {

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
  using Cpu = cpu::AttentionPrimitives;
  if (Status s = Cpu::store(shard_, layer, first_, k, v, n, {}); !s.ok()) return s;
  const int64_t kvf = shape_.kv_floats(), qf = shape_.q_floats(), H = shape_.n_heads;
  const int me = comm_.rank();
  int64_t earlier = 0;
  for (int r = 0; r < me; ++r) earlier += segment_tokens_[r] > 0 ? 1 : 0;
  const int64_t n_partials = 1 + earlier;
  partial_out_.resize(n_partials * n * qf);
  partial_lse_.resize(n_partials * n * H);
  lse_.resize(n * H);

  if (Status s = Cpu::attend(shape_, q, n, shard_, layer, first_, n, causal_mask_from(0), partial_out_.data(),
                             partial_lse_.data(), skip_softmax(), {});
      !s.ok()) {
    return s;
  }

  // K then V of this layer's segment travel together around the ring, rounded as the shard stores
  // them, so every rank attends to the values a dense run would read from its cache.
  packed_.resize(2 * n * kvf);
  std::memcpy(packed_.data(), k, n * kvf * sizeof(float));
  std::memcpy(packed_.data() + n * kvf, v, n * kvf * sizeof(float));
  round_kv(shard_.dtype(), packed_.data(), 2 * n * kvf);
  std::vector<int64_t> floats_per_rank(segment_tokens_.size());
  for (size_t r = 0; r < segment_tokens_.size(); ++r) floats_per_rank[r] = 2 * segment_tokens_[r] * kvf;

  const float scale = 1.0f / std::sqrt(static_cast<float>(shape_.head_dim));
  int64_t next = 1;
  double attending = 0;
  const double pass_start = process_cpu_seconds();
  Status s = ring_pass(comm_, packed_, floats_per_rank, [&](int source, std::span<const float> kv) -> Status {
    const int64_t rows = segment_tokens_[source];
    if (source > me || rows == 0) return ok_status();  // later segments are causally invisible
    const double t0 = process_cpu_seconds();
    KvRows keys = KvRows::f32(kv.data()), values = KvRows::f32(kv.data() + rows * kvf);
    if (shard_.dtype() == KvDType::kBF16) {
      // The kernel may multiply a bf16 cache's rows as bf16 pairs (cpu::attention_rounds_to_bf16),
      // which float32 rows never take: the segment goes in as the bf16 rows it was rounded to.
      segment_bf16_.resize(static_cast<size_t>(kv_bytes(KvDType::kBF16, 2 * rows * kvf)));
      encode_kv(KvDType::kBF16, kv.data(), 2 * rows * kvf, segment_bf16_.data());
      keys = KvRows{segment_bf16_.data(), KvDType::kBF16};
      values = keys.at(rows * kvf);
    }
    cpu::attention_forward(q, n, keys, values, rows, shape_.n_heads, shape_.n_kv_heads, shape_.head_dim, scale,
                           AttentionMask{}, partial_out_.data() + next * n * qf, partial_lse_.data() + next * n * H,
                           skip_softmax());
    attending += process_cpu_seconds() - t0;
    ++next;
    return ok_status();
  });
  communication_cpu_seconds_ += process_cpu_seconds() - pass_start - attending;
  if (!s.ok()) return s;
  merge_partials(partial_out_.data(), partial_lse_.data(), n_partials, n, H, shape_.head_dim, out, lse_.data());
  return ok_status();
}

}  // namespace star
