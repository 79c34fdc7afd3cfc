#include "star/attention/merge.h"

#include <algorithm>

#include "star/attention/merge_math.h"

namespace star {

void merge_partials(const float* outs, const float* lses, int64_t n_partials, int64_t n,
                    int64_t n_heads, int64_t head_dim, float* out, float* lse) {
  const int64_t rows = n * n_heads;  // (token, head) pairs
  const int64_t partial_stride = rows * head_dim;
#pragma omp parallel for schedule(static) if (n_partials * rows * head_dim >= (1 << 16))
  for (int64_t row = 0; row < rows; ++row) {
    const float total = merge_math::merged_lse(lses + row, n_partials, rows);
    lse[row] = total;
    float* dst = out + row * head_dim;
    std::fill(dst, dst + head_dim, 0.f);
    for (int64_t p = 0; p < n_partials; ++p) {
      const float w = merge_math::partial_weight(lses[p * rows + row], total);
      if (w == 0.f) continue;
      const float* src = outs + p * partial_stride + row * head_dim;
      for (int64_t i = 0; i < head_dim; ++i) dst[i] += w * src[i];
    }
  }
}

}  // namespace star
