// float32 <-> bf16 conversions on the GPU (GEMM inputs, the bf16 KV cache).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"

namespace star::cuda {

// y[n] = x[n] rounded to the nearest bf16 (ties to even, as star::f32_to_bf16). Device pointers.
Status to_bf16(const float* x, int64_t n, __nv_bfloat16* y, cudaStream_t stream);

// y[n] = x[n] widened to float32 (exact). Device pointers.
Status to_f32(const __nv_bfloat16* x, int64_t n, float* y, cudaStream_t stream);

}  // namespace star::cuda
