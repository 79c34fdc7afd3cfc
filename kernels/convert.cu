#include "reduce.cuh"
#include "star/backend/cuda/convert.h"
#include "star/backend/cuda/cuda_status.h"

namespace star::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void to_bf16_kernel(const float* x, int64_t n, __nv_bfloat16* y) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    y[i] = __float2bfloat16_rn(x[i]);
  }
}

__global__ void to_f32_kernel(const __nv_bfloat16* x, int64_t n, float* y) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    y[i] = __bfloat162float(x[i]);
  }
}

}  // namespace

Status to_bf16(const float* x, int64_t n, __nv_bfloat16* y, cudaStream_t stream) {
  if (n < 0) return invalid_argument("to_bf16: n must be >= 0, got " + std::to_string(n));
  if (n == 0) return ok_status();
  to_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, n, y);
  return launch_status("to_bf16_kernel");
}

Status to_f32(const __nv_bfloat16* x, int64_t n, float* y, cudaStream_t stream) {
  if (n < 0) return invalid_argument("to_f32: n must be >= 0, got " + std::to_string(n));
  if (n == 0) return ok_status();
  to_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, n, y);
  return launch_status("to_f32_kernel");
}

}  // namespace star::cuda
