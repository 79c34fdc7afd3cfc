// RMSNorm on the GPU; same definition as cpu::rms_norm.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"

namespace star::cuda {

// y[n, dim] = x[n, dim] / sqrt(mean(x[i, :]^2) + eps) * w[dim], row by row, float32 throughout.
// Device pointers; y may alias x. One thread block per row.
Status rms_norm(const float* x, int64_t n, int64_t dim, const float* w, float eps, float* y,
                cudaStream_t stream);

}  // namespace star::cuda
