#include "star/backend/cpu/attention_primitives.h"

#include <cmath>
#include <cstring>

#include "star/attention/merge.h"

namespace star::cpu {

Result<int64_t> AttentionPrimitives::grow(Cache& cache, int64_t n, Context) { return cache.grow(n); }

Status AttentionPrimitives::store(Cache& cache, int64_t layer, int64_t first, const float* k, const float* v,
                                  int64_t n, Context) {
  cache.store(layer, first, k, v, n);
  return ok_status();
}

Status AttentionPrimitives::attend(const AttentionShape& s, const float* q, int64_t n, const Cache& cache,
                                   int64_t layer, int64_t first, int64_t rows, const AttentionMask& mask, float* out,
                                   float* lse, const SkipSoftmax& skip, Context) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  attention_forward(q, n, cache.keys(layer).at(first * s.kv_floats()), cache.values(layer).at(first * s.kv_floats()),
                    rows, s.n_heads, s.n_kv_heads, s.head_dim, scale, mask, out, lse, skip);
  return ok_status();
}

Status AttentionPrimitives::attend_shared(const AttentionShape& s, const float* q, int64_t queries, int64_t n,
                                          const Cache& cache, int64_t layer, int64_t first, int64_t rows, float* out,
                                          float* lse, Context) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  attention_forward_shared_keys(q, queries, n, cache.keys(layer).at(first * s.kv_floats()),
                                cache.values(layer).at(first * s.kv_floats()), rows, s.n_heads, s.n_kv_heads,
                                s.head_dim, scale, out, lse);
  return ok_status();
}

Status AttentionPrimitives::merge(const float* outs, const float* lses, int64_t partials, int64_t n,
                                  const AttentionShape& s, float* out, float* lse, Context) {
  merge_partials(outs, lses, partials, n, s.n_heads, s.head_dim, out, lse);
  return ok_status();
}

Status AttentionPrimitives::merge_packed(const float* packed, int64_t partials, int64_t n, const AttentionShape& s,
                                         float* out, float* lse, Context) {
  merge_packed_partials(packed, partials, n, s.n_heads, s.head_dim, out, lse);
  return ok_status();
}

Status AttentionPrimitives::reserve(Floats& floats, int64_t count) {
  if (static_cast<int64_t>(floats.size()) < count) floats.resize(static_cast<size_t>(count));
  return ok_status();
}

Status AttentionPrimitives::copy(float* dst, const float* src, int64_t count, Context) {
  std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
  return ok_status();
}

Status AttentionPrimitives::all_gather(Communicator& comm, const float* send, int64_t count, float* recv, Context) {
  return comm.all_gather(send, static_cast<size_t>(count) * sizeof(float), recv);
}

}  // namespace star::cpu
