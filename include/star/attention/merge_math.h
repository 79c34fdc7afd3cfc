// Log-sum-exp merge of partial attention results, per element, shared by the CPU and CUDA backends.
// Partial p covers a disjoint key set and holds (out_p, lse_p): its softmax-weighted values and the
// natural-log log-sum-exp of its scaled scores. Over the union of the key sets:
//   m = max_p lse_p;  lse = m + ln sum_p exp(lse_p - m);  out = sum_p exp(lse_p - lse) * out_p.
// The max shift keeps every exponent <= 0, so gaps of any size neither overflow nor produce NaN
// (the form lse + log(1 + exp(lse_p - lse)) overflows once the gap passes ~88). A partial with
// lse = -inf (no keys) has weight 0; when all are -inf, lse = -inf and every weight is 0.
#pragma once

#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define STAR_HOST_DEVICE __host__ __device__
#else
#define STAR_HOST_DEVICE
#endif

namespace star::merge_math {

// The merged log-sum-exp of count partial values lses[0], lses[stride], ...
STAR_HOST_DEVICE inline float merged_lse(const float* lses, int64_t count, int64_t stride) {
  float m = -INFINITY;
  for (int64_t p = 0; p < count; ++p) m = fmaxf(m, lses[p * stride]);
  if (m == -INFINITY) return -INFINITY;
  float sum = 0.f;
  for (int64_t p = 0; p < count; ++p) sum += expf(lses[p * stride] - m);
  return m + logf(sum);
}

// The weight of a partial with log-sum-exp lse_p in a merge whose total is lse.
STAR_HOST_DEVICE inline float partial_weight(float lse_p, float lse) {
  return lse_p == -INFINITY ? 0.f : expf(lse_p - lse);
}

}  // namespace star::merge_math
