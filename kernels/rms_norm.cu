#include "reduce.cuh"
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/rms_norm.h"

namespace star::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row; the sum of squares reduces across the block in float32.
__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(const float* x, int64_t dim, const float* w, float eps, float* y) {
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * dim;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * dim;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) sum += xr[i] * xr[i];
  sum = block_sum<kThreads>(sum);  // its barrier also orders every read of x before y is written
  const float inv_rms = 1.f / sqrtf(sum / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) yr[i] = (xr[i] * inv_rms) * w[i];
}

}  // namespace

Status rms_norm(const float* x, int64_t n, int64_t dim, const float* w, float eps, float* y,
                cudaStream_t stream) {
  if (n < 0 || dim <= 0) {
    return invalid_argument("rms_norm: need n >= 0 and dim > 0, got n " + std::to_string(n) +
                            ", dim " + std::to_string(dim));
  }
  if (n == 0) return ok_status();
  rms_norm_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(x, dim, w, eps, y);
  return launch_status("rms_norm_kernel");
}

}  // namespace star::cuda
