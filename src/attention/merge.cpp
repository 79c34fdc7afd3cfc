#include "star/attention/merge.h"

#include <algorithm>

#include "star/attention/merge_math.h"

namespace star {
namespace {

// Partial p's outputs start at outs + p * out_stride and its lses at lses + p * lse_stride.
void merge_strided(const float* outs, int64_t out_stride, const float* lses, int64_t lse_stride, int64_t n_partials,
                   int64_t rows, int64_t head_dim, float* out, float* lse) {
#pragma omp parallel for schedule(static) if (n_partials * rows * head_dim >= (1 << 16))
  for (int64_t row = 0; row < rows; ++row) {
    const float total = merge_math::merged_lse(lses + row, n_partials, lse_stride);
    lse[row] = total;
    float* dst = out + row * head_dim;
    std::fill(dst, dst + head_dim, 0.f);
    for (int64_t p = 0; p < n_partials; ++p) {
      const float w = merge_math::partial_weight(lses[p * lse_stride + row], total);
      if (w == 0.f) continue;
      const float* src = outs + p * out_stride + row * head_dim;
      for (int64_t i = 0; i < head_dim; ++i) dst[i] += w * src[i];
    }
  }
}

}  // namespace

void merge_partials(const float* outs, const float* lses, int64_t n_partials, int64_t n,
                    int64_t n_heads, int64_t head_dim, float* out, float* lse) {
  const int64_t rows = n * n_heads;  // (token, head) pairs
  merge_strided(outs, rows * head_dim, lses, rows, n_partials, rows, head_dim, out, lse);
}

void merge_packed_partials(const float* packed, int64_t n_partials, int64_t n, int64_t n_heads,
                           int64_t head_dim, float* out, float* lse) {
  const int64_t rows = n * n_heads;
  const int64_t per_partial = rows * (head_dim + 1);
  merge_strided(packed, per_partial, packed + rows * head_dim, per_partial, n_partials, rows, head_dim, out, lse);
}

}  // namespace star
