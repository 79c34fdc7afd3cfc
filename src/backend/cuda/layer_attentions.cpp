#include "star/backend/cuda/layer_attentions.h"

#include <chrono>
#include <cmath>
#include <string>

#include "star/backend/cuda/attention.h"
#include "star/backend/cuda/convert.h"
#include "star/backend/cuda/merge.h"

namespace star::cuda {
namespace {

float scale_of(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.head_dim)); }

AttentionMask causal_from(int64_t offset, AttentionWindow window) {
  AttentionMask mask;
  mask.causal = true;
  mask.causal_offset = offset;
  mask.window = window;
  return mask;
}

// Rows [first, first + n) of one cache layer = k, v rounded to bf16.
Status store_rows(DeviceKvCache& cache, int64_t layer, int64_t first, const float* k, const float* v,
                  int64_t n, cudaStream_t stream) {
  const int64_t row = cache.row_elements();
  if (Status s = to_bf16(k, n * row, cache.keys(layer) + first * row, stream); !s.ok()) return s;
  return to_bf16(v, n * row, cache.values(layer) + first * row, stream);
}

// Grows buffer to hold at least `count` floats (contents not kept).
Status ensure_floats(DeviceBuffer<float>& buffer, int64_t count) {
  if (static_cast<int64_t>(buffer.size()) >= count) return ok_status();
  Result<DeviceBuffer<float>> bigger = DeviceBuffer<float>::allocate(static_cast<size_t>(count));
  if (!bigger.ok()) return bigger.status();
  buffer = std::move(*bigger);
  return ok_status();
}

}  // namespace

DeviceCausalAttention::DeviceCausalAttention(AttentionShape shape, DeviceKvCache& cache,
                                             AttentionWindow window)
    : shape_(shape), cache_(cache), window_(window) {}

Status DeviceCausalAttention::begin(int64_t n_new, cudaStream_t stream) {
  Result<int64_t> first = cache_.grow(n_new, stream);
  if (!first.ok()) return first.status();
  first_ = *first;
  return ensure_floats(lse_, n_new * shape_.n_heads);
}

Status DeviceCausalAttention::attend(int64_t layer, const float* q, const float* k, const float* v,
                                     int64_t n, float* out, cudaStream_t stream) {
  if (Status s = store_rows(cache_, layer, first_, k, v, n, stream); !s.ok()) return s;
  return attention_forward(q, n, cache_.keys(layer), cache_.values(layer), first_ + n,
                           shape_.n_heads, shape_.n_kv_heads, shape_.head_dim, scale_of(shape_),
                           causal_from(first_, window_), out, lse_.data(), stream, skip_softmax());
}

DevicePrefixedBlockAttention::DevicePrefixedBlockAttention(AttentionShape shape,
                                                           const DeviceKvCache& prefix,
                                                           DeviceKvCache& shard, AttentionWindow window)
    : shape_(shape), prefix_(prefix), shard_(shard), window_(window) {}

Status DevicePrefixedBlockAttention::begin(int64_t n_new, cudaStream_t stream) {
  Result<int64_t> first = shard_.grow(n_new, stream);
  if (!first.ok()) return first.status();
  first_ = *first;
  if (Status s = ensure_floats(partial_out_, 2 * n_new * shape_.q_floats()); !s.ok()) return s;
  if (Status s = ensure_floats(partial_lse_, 2 * n_new * shape_.n_heads); !s.ok()) return s;
  return ensure_floats(lse_, n_new * shape_.n_heads);
}

Status DevicePrefixedBlockAttention::attend(int64_t layer, const float* q, const float* k,
                                            const float* v, int64_t n, float* out,
                                            cudaStream_t stream) {
  if (Status s = store_rows(shard_, layer, first_, k, v, n, stream); !s.ok()) return s;
  const int64_t row = shard_.row_elements();
  const __nv_bfloat16* block_keys = shard_.keys(layer) + first_ * row;
  const __nv_bfloat16* block_values = shard_.values(layer) + first_ * row;
  const int64_t np = prefix_.tokens();
  if (np == 0) {
    return attention_forward(q, n, block_keys, block_values, n, shape_.n_heads, shape_.n_kv_heads,
                             shape_.head_dim, scale_of(shape_), causal_from(0, window_), out,
                             lse_.data(), stream, skip_softmax());
  }
  // The prefix precedes every block token (no mask); the block is causal; merge the two.
  float* out_prefix = partial_out_.data();
  float* out_block = partial_out_.data() + n * shape_.q_floats();
  float* lse_prefix = partial_lse_.data();
  float* lse_block = partial_lse_.data() + n * shape_.n_heads;
  if (Status s = attention_forward(q, n, prefix_.keys(layer), prefix_.values(layer), np,
                                   shape_.n_heads, shape_.n_kv_heads, shape_.head_dim,
                                   scale_of(shape_), AttentionMask{}, out_prefix, lse_prefix, stream, skip_softmax());
      !s.ok()) {
    return s;
  }
  if (Status s = attention_forward(q, n, block_keys, block_values, n, shape_.n_heads,
                                   shape_.n_kv_heads, shape_.head_dim, scale_of(shape_),
                                   causal_from(0, {}), out_block, lse_block, stream, skip_softmax());
      !s.ok()) {
    return s;
  }
  return merge_partials(partial_out_.data(), partial_lse_.data(), 2, n, shape_.n_heads,
                        shape_.head_dim, out, lse_.data(), stream);
}

DeviceShardedQueryAttention::DeviceShardedQueryAttention(AttentionShape shape, Communicator& comm,
                                                         DeviceKvCache& shard, bool is_query_host,
                                                         AttentionWindow window)
    : shape_(shape), comm_(comm), shard_(shard), is_query_host_(is_query_host), window_(window) {}

Status DeviceShardedQueryAttention::begin(int64_t n_new, cudaStream_t stream) {
  if (is_query_host_) {
    Result<int64_t> first = shard_.grow(n_new, stream);
    if (!first.ok()) return first.status();
    first_ = *first;
  } else {
    first_ = shard_.tokens();
  }
  const int64_t per_rank = n_new * shape_.n_heads * (shape_.head_dim + 1);
  if (Status s = ensure_floats(local_, per_rank); !s.ok()) return s;
  if (Status s = ensure_floats(gathered_, per_rank * comm_.size()); !s.ok()) return s;
  return ensure_floats(lse_, n_new * shape_.n_heads);
}

Status DeviceShardedQueryAttention::attend(int64_t layer, const float* q, const float* k,
                                           const float* v, int64_t n, float* out,
                                           cudaStream_t stream) {
  const int64_t qf = shape_.q_floats();
  // Local partial, packed as [out n·Hq·d | lse n·Hq] so one all-gather carries both.
  float* local_out = local_.data();
  float* local_lse = local_.data() + n * qf;
  Status attended;
  if (is_query_host_) {
    if (Status s = store_rows(shard_, layer, first_, k, v, n, stream); !s.ok()) return s;
    attended = attention_forward(q, n, shard_.keys(layer), shard_.values(layer), first_ + n,
                                 shape_.n_heads, shape_.n_kv_heads, shape_.head_dim,
                                 scale_of(shape_), causal_from(first_, window_), local_out,
                                 local_lse, stream, skip_softmax());
  } else {
    // A remote shard lies wholly before every query token: no mask.
    attended = attention_forward(q, n, shard_.keys(layer), shard_.values(layer), shard_.tokens(),
                                 shape_.n_heads, shape_.n_kv_heads, shape_.head_dim,
                                 scale_of(shape_), AttentionMask{}, local_out, local_lse, stream, skip_softmax());
  }
  if (!attended.ok()) return attended;
  if (comm_.size() == 1) {
    return cuda_status(cudaMemcpyAsync(out, local_out, static_cast<size_t>(n * qf) * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream),
                       "DeviceShardedQueryAttention: copying the local output");
  }
  const int64_t per_rank = n * shape_.n_heads * (shape_.head_dim + 1);
  if (Status s = cuda_status(cudaStreamSynchronize(stream), "DeviceShardedQueryAttention: before the all-gather");
      !s.ok()) {
    return s;
  }
  const auto start = std::chrono::steady_clock::now();
  if (Status s = comm_.all_gather(local_.data(), static_cast<size_t>(per_rank) * sizeof(float),
                                  gathered_.data());
      !s.ok()) {
    return s;
  }
  floats_sent_ += per_rank;
  Status merged = merge_packed_partials(gathered_.data(), comm_.size(), n, shape_.n_heads, shape_.head_dim,
                                        out, lse_.data(), stream);
  gather_merge_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return merged;
}

}  // namespace star::cuda
