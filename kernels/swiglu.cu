#include "reduce.cuh"
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/swiglu.h"

namespace star::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void swiglu_kernel(const float* gate, const float* up, int64_t n, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float g = gate[i];
    out[i] = g / (1.f + expf(-g)) * up[i];
  }
}

}  // namespace

Status swiglu(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream) {
  if (n < 0) return invalid_argument("swiglu: n must be >= 0, got " + std::to_string(n));
  if (n == 0) return ok_status();
  swiglu_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(gate, up, n, out);
  return launch_status("swiglu_kernel");
}

}  // namespace star::cuda
