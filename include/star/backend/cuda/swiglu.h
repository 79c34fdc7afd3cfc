// The SwiGLU gate on the GPU; same definition as cpu::swiglu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"

namespace star::cuda {

// out[n] = silu(gate[n]) * up[n], silu(x) = x / (1 + e^-x). Device pointers; out may alias
// gate or up.
Status swiglu(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream);

}  // namespace star::cuda
