#include "star/backend/cpu/swiglu.h"

#include <cmath>

#include "simd.h"

namespace star::cpu {

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  using simd::kLanes;
  const int64_t n_vec = n / kLanes * kLanes;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n_vec; i += kLanes) {
    const simd::Vec g = simd::load(gate + i);
    const simd::Vec silu = g / (1.f + simd::exp(-g));
    simd::store(out + i, silu * simd::load(up + i));
  }
  for (int64_t i = n_vec; i < n; ++i) out[i] = gate[i] / (1.f + std::exp(-gate[i])) * up[i];
}

}  // namespace star::cpu
