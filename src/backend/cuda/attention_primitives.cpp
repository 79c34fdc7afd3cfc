#include "star/backend/cuda/attention_primitives.h"

#include <cmath>
#include <utility>

#include "star/backend/cuda/attention.h"
#include "star/backend/cuda/convert.h"
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/merge.h"

namespace star::cuda {

Result<int64_t> AttentionPrimitives::grow(Cache& cache, int64_t n, Context stream) { return cache.grow(n, stream); }

Status AttentionPrimitives::store(Cache& cache, int64_t layer, int64_t first, const float* k, const float* v,
                                  int64_t n, Context stream) {
  const int64_t row = cache.row_elements();
  if (Status s = to_bf16(k, n * row, cache.keys(layer) + first * row, stream); !s.ok()) return s;
  return to_bf16(v, n * row, cache.values(layer) + first * row, stream);
}

Status AttentionPrimitives::attend(const AttentionShape& s, const float* q, int64_t n, const Cache& cache,
                                   int64_t layer, int64_t first, int64_t rows, const AttentionMask& mask, float* out,
                                   float* lse, const SkipSoftmax& skip, Context stream) {
  const int64_t row = cache.row_elements();
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  return attention_forward(q, n, cache.keys(layer) + first * row, cache.values(layer) + first * row, rows, s.n_heads,
                           s.n_kv_heads, s.head_dim, scale, mask, out, lse, stream, skip);
}

Status AttentionPrimitives::merge(const float* outs, const float* lses, int64_t partials, int64_t n,
                                  const AttentionShape& s, float* out, float* lse, Context stream) {
  return merge_partials(outs, lses, partials, n, s.n_heads, s.head_dim, out, lse, stream);
}

Status AttentionPrimitives::merge_packed(const float* packed, int64_t partials, int64_t n, const AttentionShape& s,
                                         float* out, float* lse, Context stream) {
  return merge_packed_partials(packed, partials, n, s.n_heads, s.head_dim, out, lse, stream);
}

Status AttentionPrimitives::reserve(Floats& floats, int64_t count) {
  if (static_cast<int64_t>(floats.size()) >= count) return ok_status();
  Result<Floats> bigger = Floats::allocate(static_cast<size_t>(count));
  if (!bigger.ok()) return bigger.status();
  floats = std::move(*bigger);
  return ok_status();
}

Status AttentionPrimitives::copy(float* dst, const float* src, int64_t count, Context stream) {
  return cuda_status(cudaMemcpyAsync(dst, src, static_cast<size_t>(count) * sizeof(float), cudaMemcpyDeviceToDevice,
                                     stream),
                     "attention: copying the local output");
}

Status AttentionPrimitives::all_gather(Communicator& comm, const float* send, int64_t count, float* recv,
                                       Context stream) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  if (comm.orders_on_device_streams()) return comm.all_gather_ordered(send, bytes, recv, stream);
  if (Status s = cuda_status(cudaStreamSynchronize(stream), "attention: before a host transport's all-gather");
      !s.ok()) {
    return s;
  }
  return comm.all_gather(send, bytes, recv);
}

}  // namespace star::cuda
