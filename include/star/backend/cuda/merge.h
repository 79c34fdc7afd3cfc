// The online-softmax merge of partial attention results on the GPU (Phase 2 after the NCCL
// all-gather, and the key splits of attention_forward). The per-element math is
// star/attention/merge_math.h, the same code the CPU merge_partials runs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"

namespace star::cuda {

// outs [P, n, H, d] and lses [P, n, H], partial-major; writes out [n, H, d] and lse [n, H]:
//   m = max_p lse_p; lse = m + ln sum_p exp(lse_p - m); out = sum_p exp(lse_p - lse) * out_p.
// A partial with lse = -inf contributes nothing; all -inf gives out 0, lse -inf. float32.
// Device pointers; out and lse must not overlap the inputs.
Status merge_partials(const float* outs, const float* lses, int64_t n_partials, int64_t n,
                      int64_t n_heads, int64_t head_dim, float* out, float* lse,
                      cudaStream_t stream);

// The same merge over packed partials, as one all-gather delivers them: partial p starts at
// packed + p * n * H * (d + 1) and holds [out n·H·d | lse n·H].
Status merge_packed_partials(const float* packed, int64_t n_partials, int64_t n, int64_t n_heads,
                             int64_t head_dim, float* out, float* lse, cudaStream_t stream);

}  // namespace star::cuda
