// The CPU backend's attention primitives, the operations the situations of
// star/attention/attention_situations.h are written over: grow and store a host KvCache, attend
// to a run of its rows (cpu::attention_forward), merge partials (merge.h), all-gather partials on
// the host communicator. Work runs when called.
#pragma once

#include <cstdint>
#include <vector>

#include "star/attention/attention_shape.h"
#include "star/backend/cpu/attention.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/model/kv_cache.h"

namespace star::cpu {

struct AttentionPrimitives {
  using Cache = KvCache;
  using Floats = std::vector<float>;
  struct Context {};

  static Result<int64_t> grow(Cache& cache, int64_t n, Context);
  static Status store(Cache& cache, int64_t layer, int64_t first, const float* k, const float* v, int64_t n,
                      Context);
  static Status attend(const AttentionShape& shape, const float* q, int64_t n, const Cache& cache, int64_t layer,
                       int64_t first, int64_t rows, const AttentionMask& mask, float* out, float* lse,
                       const SkipSoftmax& skip, Context);
  // `queries` queries of n rows each (q [queries * n, Hq, d]) against the same rows, no mask: each
  // query's rows bit for bit what attend gives it, the rows read once for all of them.
  static constexpr bool kSharesKeyReads = true;
  static Status attend_shared(const AttentionShape& shape, const float* q, int64_t queries, int64_t n,
                              const Cache& cache, int64_t layer, int64_t first, int64_t rows, float* out, float* lse,
                              Context);
  static Status merge(const float* outs, const float* lses, int64_t partials, int64_t n, const AttentionShape& shape,
                      float* out, float* lse, Context);
  static Status merge_packed(const float* packed, int64_t partials, int64_t n, const AttentionShape& shape,
                             float* out, float* lse, Context);
  static Status reserve(Floats& floats, int64_t count);
  static float* data(Floats& floats) { return floats.data(); }
  static Status copy(float* dst, const float* src, int64_t count, Context);
  static Status all_gather(Communicator& comm, const float* send, int64_t count, float* recv, Context);
};

}  // namespace star::cpu
