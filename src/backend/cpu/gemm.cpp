#include "star/backend/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cassert>
#include <limits>

namespace star::cpu {

void matmul_nt(const float* x, int64_t n, int64_t k, const float* w, int64_t m, float* y,
               bool accumulate) {
  assert(n >= 0 && k >= 0 && m >= 0);
  assert(std::max({n, k, m}) <= std::numeric_limits<blasint>::max());
  if (n == 0 || m == 0) return;
  if (k == 0) {
    // An empty sum; BLAS implementations disagree on whether they still apply beta here.
    if (!accumulate) std::fill(y, y + n * m, 0.f);
    return;
  }
  const float beta = accumulate ? 1.f : 0.f;
  const auto ld = static_cast<blasint>(k);
  if (n == 1) {
    // y[m] = w[m, k] · x[k]
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(k), 1.f,
                w, ld, x, 1, beta, y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n),
              static_cast<blasint>(m), static_cast<blasint>(k), 1.f, x, ld, w, ld, beta, y,
              static_cast<blasint>(m));
}

}  // namespace star::cpu
