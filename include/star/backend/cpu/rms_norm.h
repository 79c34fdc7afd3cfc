// RMSNorm (Llama's pre-attention, pre-FFN and final norms).
#pragma once

#include <cstdint>

namespace star::cpu {

// y[n, dim] = x[n, dim] / sqrt(mean(x[i, :]^2) + eps) * w[dim], each row on its own, in float32
// like HF (x * rsqrt(variance + eps), then * weight). y may alias x.
void rms_norm(const float* x, int64_t n, int64_t dim, const float* w, float eps, float* y);

}  // namespace star::cpu
