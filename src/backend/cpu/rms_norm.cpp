#include "star/backend/cpu/rms_norm.h"

#include <cmath>

#include "simd.h"

namespace star::cpu {
namespace {

using simd::kLanes;
using simd::Vec;

// sum_i x[i]^2 over dim elements, with four independent accumulators to hide add latency.
float sum_of_squares(const float* x, int64_t dim) {
  Vec acc[4] = {};
  int64_t i = 0;
  for (; i + 4 * kLanes <= dim; i += 4 * kLanes) {
    for (int a = 0; a < 4; ++a) {
      const Vec v = simd::load(x + i + a * kLanes);
      acc[a] += v * v;
    }
  }
  for (; i + kLanes <= dim; i += kLanes) {
    const Vec v = simd::load(x + i);
    acc[0] += v * v;
  }
  float sum = simd::reduce_add((acc[0] + acc[1]) + (acc[2] + acc[3]));
  for (; i < dim; ++i) sum += x[i] * x[i];
  return sum;
}

}  // namespace

void rms_norm(const float* x, int64_t n, int64_t dim, const float* w, float eps, float* y) {
  // Rows are independent; threads pay off only for prefill-sized inputs.
#pragma omp parallel for schedule(static) if (n * dim >= (1 << 16))
  for (int64_t row = 0; row < n; ++row) {
    const float* xr = x + row * dim;
    float* yr = y + row * dim;
    const float mean = sum_of_squares(xr, dim) / static_cast<float>(dim);
    const float inv_rms = 1.f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] * inv_rms) * w[i];
  }
}

}  // namespace star::cpu
